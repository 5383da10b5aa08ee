"""Dyck-2 words as an MI Lens domain: ``MI_LENS_DOMAINS=brackets`` registers ``brackets``.

Words over ( ) [ ] that are well-nested, even lengths 8-16; token 0 masked, 1-4 the brackets, 5 padding.
Model: the engine's sequence MDM (``train brackets``); the shipped weights are in ``weights/`` (the commands
that remake them are in ``examples/README.md``), ``$MI_LENS_BRACKETS_MODEL`` and ``$MI_LENS_BRACKETS_ESTIMATOR``
replace them. No order selector ships (``train-order brackets`` makes one: ``$MI_LENS_BRACKETS_SELECTOR``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from brackets.order import BracketsOrderTask
from brackets.words import ALPHABET, MASK_ID, MAX_LEN, MIN_LEN, PAD_ID, completable, draw_word, is_dyck
from mi_core.bench.metrics import pass_stats
from mi_core.domain import ConfigStates, Domain, ShardConfig, register, uniform_mask
from mi_core.models.mdm import DomainMDM, SequenceMDMConfig
from mi_core.options import SKIP, only, option, redefault
from mi_core.train.sequences import SequenceTask

HERE = Path(__file__).resolve().parent
RUNS = HERE / "weights"
DEFAULT_MODEL = str(RUNS / "brackets_mdm.safetensors")


# -- the model -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BracketsMDMConfig(SequenceMDMConfig):
    max_len: int = redefault(SequenceMDMConfig, "max_len", MAX_LEN)
    d_model: int = redefault(SequenceMDMConfig, "d_model", 64)
    n_layers: int = redefault(SequenceMDMConfig, "n_layers", 4)
    d_ff: int = redefault(SequenceMDMConfig, "d_ff", 256)
    dropout: float = redefault(SequenceMDMConfig, "dropout", 0.0)


MDM = DomainMDM("brackets", values=4, mask_id=MASK_ID, pad_id=PAD_ID, default=DEFAULT_MODEL)


# -- training ----------------------------------------------------------------------------------------------------
@dataclass
class WordData:
    train_words: int = option(50_000, "random training words (the held-out tenth of words excluded)",
                              range=(1, 10_000_000))
    val_words: int = option(500, "held-out validation words", range=(1, 1_000_000))


class BracketsTask(SequenceTask):
    """``train brackets``: the engine's sequence task on uniform Dyck-2 words of lengths 8-16."""

    name, model_cls, options = "brackets_mdm", MDM.model_cls, WordData
    model_config, save = BracketsMDMConfig, MDM.save

    def read_data(self, args, cfg, log):
        rng = np.random.default_rng(cfg.split_seed)
        train = [draw_word(rng, "train") for _ in range(args["train_words"])]
        val = [draw_word(rng, "heldout") for _ in range(args["val_words"])]
        log(f"{len(train)} training words, {len(val)} held-out validation words (lengths {MIN_LEN}-{MAX_LEN})")
        return train, val, {"train": len(train), "val": len(val)}


# -- states for the estimator ------------------------------------------------------------------------------------
SOURCES = ("uniform",)


@dataclass(frozen=True)
class BracketsDataConfig(ShardConfig):
    states: int = redefault(ShardConfig, "states", 200)
    max_batch: int = redefault(ShardConfig, "max_batch", 256)
    min_len: int = option(MIN_LEN, "shortest word", range=(2, MAX_LEN))
    max_len: int = option(MAX_LEN, "longest word (the shards' width)", range=(2, MAX_LEN))
    min_masked: int = option(2, "fewest masked positions", range=(2, MAX_LEN))
    split: str = "train"

    def __post_init__(self):
        super().__post_init__()
        if self.max_len < self.min_len or self.min_len % 2 or self.max_len % 2:
            raise ValueError(f"--min-len/--max-len must be even with min <= max, got {self.min_len}-{self.max_len}")


class BracketsStates(ConfigStates):
    config_cls, sources = BracketsDataConfig, SOURCES
    data_options = BracketsDataConfig, {"split": SKIP}
    eval_options = only(BracketsDataConfig, "min_len", "max_len", "min_masked")
    held_out_config = {"split": "heldout"}
    eval_defaults = {"states": 40, "threshold": 1e-2, "max_batch": 256}

    @property
    def width(self) -> int:
        return self.cfg.max_len

    def check(self, model) -> None:
        if self.cfg.max_len > model.max_len:
            raise ValueError(f"--max-len {self.cfg.max_len} is longer than the model's {model.max_len}")

    def draw(self, model, rng, count, device):
        c, lengths = self.cfg, (self.cfg.min_len, self.cfg.max_len)
        out = [uniform_mask(draw_word(rng, c.split, lengths), rng, c.min_masked, MASK_ID) for _ in range(count)]
        return out, [0] * count

    def about(self) -> str:
        part = "the held-out tenth" if self.cfg.split == "heldout" else "the training nine tenths"
        return f"uniform Dyck-2 words of {self.cfg.min_len}-{self.cfg.max_len} from {part}, masked at t ~ U(0,1)"


# -- the metric --------------------------------------------------------------------------------------------------
class WellNestedMetric:
    """accuracy: decoded words that are well-nested AND keep every given; both parts also apart."""

    needs_solution = False

    def __init__(self, solutions, levels=None, mask_id: int = 0):
        self.mask_id, self.rows, self.passes, self.extra = mask_id, [], [], []

    def update(self, index, start, final, passes, extra=0):
        start, final = np.asarray(start), np.asarray(final)
        given = start != self.mask_id
        self.rows.append((is_dyck(final), bool((final[given] == start[given]).all())))
        self.passes.append(int(passes))
        self.extra.append(int(extra))

    def compute(self):
        r = np.array(self.rows, dtype=bool).reshape(-1, 2)
        return {"n": len(r), "accuracy": float((r[:, 0] & r[:, 1]).mean()), "well_nested": float(r[:, 0].mean()),
                "givens_kept": float(r[:, 1].mean()), **pass_stats(self.passes, self.extra)}


class BracketsOrder(BracketsOrderTask):
    """``train-order brackets``: masked words of even lengths 8-16, as ``bench-order brackets`` decodes them."""

    domain, metric = "brackets", WellNestedMetric
    load, save_denoiser = MDM.load, MDM.save


# -- the domain --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class BracketsDomain(Domain):
    def parse_input(self, text: str) -> list[int]:
        tokens = self.parse_state(text)
        if len(tokens) % 2 or not MIN_LEN <= len(tokens) <= MAX_LEN:
            raise ValueError(f"a Dyck-2 word has an even length {MIN_LEN}-{MAX_LEN}, got {len(tokens)}")
        if not completable(tokens):
            raise ValueError("no well-nested word keeps these brackets: every ( needs its ) and every [ its ], "
                             "nested, not crossed")
        return tokens


BRACKETS = register(BracketsDomain(
    "brackets", "Dyck-2 brackets", "brackets", ALPHABET, names=("brackets",), mask_id=MASK_ID, pad_id=PAD_ID,
    model_env="MI_LENS_BRACKETS_MODEL", model_default=DEFAULT_MODEL,
    estimator_env="MI_LENS_BRACKETS_ESTIMATOR", estimator_default=str(RUNS / "brackets_mi_estimator.safetensors"),
    selector_env="MI_LENS_BRACKETS_SELECTOR",  # none ships: train-order brackets makes one
    probe_fallback=True, fallback_eps=1e-3, nouns=("position", "bracket"),
    strategy_defaults=(("mi", "gamma", 3.0), ("mi", "lam", 1.0), ("eb", "gamma", 1.5)),  # examples/README.md
    summary="Well-nested words over ( ) [ ], even lengths 8 to 16, filled by a small MDM trained in 450 seconds. "
            "A bracket depends on the one that closes it: in `(__)[__]` the two blanks of each pair share MI, the "
            "pairs none, so a decoder may fill one blank of each pair together but not both blanks of one.",
    examples=(("two pairs, four masked", "(__)[__]"), ("a pair 9 apart", "_(()[])[]_"),
              ("twelve, eight masked", "_(__)____[]_"), ("sixteen, ten masked", "([__]_)____(__)_")),
    model_loader=MDM.loader, states=BracketsStates, metric=WellNestedMetric, trainer=BracketsTask,
    order_task=BracketsOrder()))
