"""A domain that lives only in the tests: words of eight letters over ``abcd`` that read the same backwards
(position i holds the letter of position 7 - i; 256 words). Its rule is tied to absolute places, which the
sequence MDM's rotary positions do not give (``--positions absolute`` does: docs/architecture.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mi_core.domain import Domain
from mi_core.models.mdm import DomainMDM, SequenceMDMConfig
from mi_core.options import option, redefault
from mi_core.train.sequences import SequenceTask

N, ALPHABET = 8, tuple("abcd")
HALVES = np.array(list(itertools.product(range(1, len(ALPHABET) + 1), repeat=N // 2)))
WORDS = np.concatenate([HALVES, HALVES[:, ::-1]], 1)  # (256, 8) token ids


def is_palindrome(tokens) -> bool:
    tokens = np.asarray(tokens)
    return bool((tokens > 0).all() and (tokens == tokens[::-1]).all())


@dataclass(frozen=True)
class PalindromeMDMConfig(SequenceMDMConfig):
    max_len: int = redefault(SequenceMDMConfig, "max_len", N)
    d_model: int = redefault(SequenceMDMConfig, "d_model", 64)
    n_layers: int = redefault(SequenceMDMConfig, "n_layers", 2)
    d_ff: int = redefault(SequenceMDMConfig, "d_ff", 128)
    dropout: float = redefault(SequenceMDMConfig, "dropout", 0.0)


MDM = DomainMDM("palindrome8", values=len(ALPHABET), mask_id=0, pad_id=len(ALPHABET) + 1, name="palindrome MDM")


@dataclass
class PalindromeData:
    train_words: int = option(200, "palindromes to train on (the other of the 256 validate)", range=(1, 255))


class PalindromeTask(SequenceTask):
    """``train palindrome8``: the engine's sequence task on a seeded split of the 256 palindromes."""

    name, model_cls, options, model_config = "palindrome8_mdm", MDM.model_cls, PalindromeData, PalindromeMDMConfig
    save = MDM.save

    def read_data(self, args, cfg, log):
        words = list(WORDS[np.random.default_rng(cfg.split_seed).permutation(len(WORDS))])
        size = args["train_words"]
        return words[:size], words[size:], {"train": size, "val": len(words) - size}


PALINDROME = Domain("palindrome8", "Palindromes of 8 (test)", "pal8", ALPHABET, pad_id=len(ALPHABET) + 1, length=N,
                    model_loader=MDM.loader, trainer=PalindromeTask)
