"""Proper 3-colourings of the 10-bead ring C10 as an MI Lens domain, in one file: the smallest complete plugin.

``MI_LENS_DOMAINS=necklace PYTHONPATH=examples:.`` registers ``necklace``. Ten beads coloured R, G or B, each unlike
its two neighbours (bead 9 neighbours bead 0): 2^10 + 2 = 1026 necklaces. Token 0 is the mask, 1-3 the colours, 4
padding. A tenth of the necklaces (by hash) is held out from training. No weights ship: ``train necklace`` makes
them in about a minute (examples/README.md), in ``runs/necklace/`` under the folder it runs from;
``$MI_LENS_NECKLACE_MODEL``, ``$MI_LENS_NECKLACE_ESTIMATOR`` and ``$MI_LENS_NECKLACE_SELECTOR`` name others.
:func:`print_states` prints masked held-out necklaces, the states ``bench`` reads.
"""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.bench.metrics import VerifiedMetric
from mi_core.domain import ConfigStates, Domain, ShardConfig, register, uniform_mask
from mi_core.models.mdm import DomainMDM, SequenceMDMConfig
from mi_core.options import SKIP, only, option, redefault
from mi_core.order.sequences import SequenceOrderTask
from mi_core.train.sequences import SequenceTask

N, ALPHABET = 10, ("R", "G", "B")
MASK_ID, PAD_ID = 0, 4  # colour v is token v + 1
WEIGHTS = Path("runs", "necklace").absolute()  # the working folder's runs/necklace/: train writes there
DEFAULT_MODEL = str(WEIGHTS / "necklace_mdm.safetensors")


# -- the data: every necklace, a held-out split, a rule check ----------------------------------------------------
def all_necklaces() -> np.ndarray:
    """Every proper 3-colouring of C10, token ids ``(1026, N)``."""
    rows = [c for c in itertools.product((1, 2, 3), repeat=N) if all(c[i] != c[(i + 1) % N] for i in range(N))]
    return np.array(rows, dtype=np.int64)


def held_out(tokens) -> bool:
    """A tenth of the necklaces (by a hash of the tokens) are never trained on."""
    return hashlib.sha256(bytes(np.asarray(tokens, dtype=np.uint8))).digest()[0] < 26


NECKLACES = all_necklaces()
SPLITS = {"train": NECKLACES[[not held_out(t) for t in NECKLACES]],
          "heldout": NECKLACES[[held_out(t) for t in NECKLACES]]}


def draw(rng: np.random.Generator, split: str = "train") -> np.ndarray:
    """A uniform necklace of ``split`` (train or heldout), ``(N,)`` token ids."""
    pool = SPLITS[split]
    return pool[int(rng.integers(len(pool)))].copy()


def verify(start, final) -> bool:
    """``Domain.verify``: ``final`` has no mask, no two neighbours alike, and keeps every bead ``start`` gives."""
    start, final = np.asarray(start), np.asarray(final)
    given = start != MASK_ID
    proper = bool((final != MASK_ID).all()) and bool((final != np.roll(final, 1)).all())
    return proper and bool((final[given] == start[given]).all())


def symmetries(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``Domain.symmetries`` (``bench --views``): ``count`` rotations or reflections of the ring, each with a colour
    permutation, as (positions ``(count, N)``, values ``(count, 3)``); the first is the identity."""
    rng = np.random.default_rng(seed)
    pos, val = [np.arange(N)], [np.arange(3)]
    for _ in range(count - 1):
        p = (np.arange(N) + rng.integers(N)) % N
        pos.append(p[::-1].copy() if rng.random() < 0.5 else p)
        val.append(rng.permutation(3))
    return np.stack(pos), np.stack(val)


# -- the model and its training (train necklace) -----------------------------------------------------------------
@dataclass(frozen=True)
class NecklaceMDMConfig(SequenceMDMConfig):
    """The engine's sequence MDM, made small: ten positions need no more, and it trains in about a minute."""

    max_len: int = redefault(SequenceMDMConfig, "max_len", N)
    d_model: int = redefault(SequenceMDMConfig, "d_model", 64)
    n_layers: int = redefault(SequenceMDMConfig, "n_layers", 3)
    d_ff: int = redefault(SequenceMDMConfig, "d_ff", 256)
    dropout: float = redefault(SequenceMDMConfig, "dropout", 0.0)
    positions: str = redefault(SequenceMDMConfig, "positions", "both")  # rotary alone learned slower in a minute


MDM = DomainMDM("necklace", values=3, mask_id=MASK_ID, pad_id=PAD_ID, default=DEFAULT_MODEL)


@dataclass
class NecklaceData:
    """``train necklace``'s own flags (``--train-necklaces``, ``--val-necklaces``)."""

    train_necklaces: int = option(20_000, "training necklaces drawn (with repeats) from the nine tenths",
                                  range=(1, 10_000_000))
    val_necklaces: int = option(200, "held-out validation necklaces", range=(1, 1_000_000))


class NecklaceTask(SequenceTask):
    """``Domain.trainer``: the engine's sequence trainer; a domain gives only its data."""

    name, model_cls, options = "necklace_mdm", MDM.model_cls, NecklaceData
    model_config, save = NecklaceMDMConfig, MDM.save

    def read_data(self, args, cfg, log):
        rng = np.random.default_rng(cfg.split_seed)
        train = [draw(rng, "train") for _ in range(args["train_necklaces"])]
        val = [draw(rng, "heldout") for _ in range(args["val_necklaces"])]
        log(f"{len(train)} training necklaces, {len(val)} held-out")
        return train, val, {"train": len(train), "val": len(val)}


# -- states for the MI estimator (make-estimator-data, eval-estimator) --------------------------------------------
@dataclass(frozen=True)
class NecklaceStates(ShardConfig):
    """The states' config: its option fields are make-estimator-data's flags."""

    min_masked: int = option(2, "fewest masked beads", range=(2, N))
    split: str = "train"


class NecklaceSource(ConfigStates):
    """``Domain.states``: necklaces masked at a rate t ~ U(0, 1); eval-estimator draws them from the held-out tenth.
    A fixed length needs no ``width`` (that pads variable-length states)."""

    config_cls, sources = NecklaceStates, ("uniform",)
    data_options = NecklaceStates, {"split": SKIP}
    eval_options = only(NecklaceStates, "min_masked")
    eval_defaults = {"states": 30, "threshold": 1e-2, "max_batch": 256}
    held_out_config = {"split": "heldout"}

    def draw(self, model, rng, count, device):
        c = self.cfg
        return [uniform_mask(draw(rng, c.split), rng, c.min_masked, MASK_ID) for _ in range(count)], [0] * count


# -- the metric (bench, sweep) and learned orders (train-order) ---------------------------------------------------
class ProperMetric(VerifiedMetric):
    """``Domain.metric``: a decode is right when :func:`verify` accepts it."""

    verify = staticmethod(verify)


class NecklaceOrder(SequenceOrderTask):
    """``Domain.order_task``: ``train-order necklace`` learns a decoding order on the training necklaces."""

    domain, load, save_denoiser = "necklace", MDM.load, MDM.save

    def splits(self, args):
        return list(SPLITS["train"]), list(SPLITS["heldout"]), {"train": len(SPLITS["train"])}


# -- the domain ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class NecklaceDomain(Domain):
    def rules(self, length: int) -> np.ndarray:
        """``(N, N)`` bool: the pairs that must differ, neighbours on the ring (the app marks a clash)."""
        out = np.zeros((length, length), dtype=bool)
        for i in range(length):
            out[i, (i + 1) % length] = out[(i + 1) % length, i] = True
        return out


NECKLACE = register(NecklaceDomain(
    "necklace", "3-coloured necklace (C10)", "necklace", ALPHABET, names=("necklace",), mask_id=MASK_ID,
    pad_id=PAD_ID, length=N, model_env="MI_LENS_NECKLACE_MODEL", model_default=DEFAULT_MODEL,
    estimator_env="MI_LENS_NECKLACE_ESTIMATOR", estimator_default=str(WEIGHTS / "necklace_mi_estimator.safetensors"),
    selector_env="MI_LENS_NECKLACE_SELECTOR", probe_fallback=True, nouns=("bead", "colour"),
    verify=verify, symmetries=symmetries,
    summary="Ten beads on a ring, coloured R, G or B, neighbours different. A bead depends on its two neighbours.",
    examples=(("all masked", "__________"), ("two given", "R____G____"), ("one gap", "RGRGRGRGR_")),
    model_loader=MDM.loader, states=NecklaceSource, metric=ProperMetric, trainer=NecklaceTask,
    order_task=NecklaceOrder()))


def print_states(count: int, seed: int = 1, split: str = "heldout") -> None:
    """Print ``count`` necklaces of ``split`` masked at t ~ U(0, 1) (two beads at least), one a line: states for
    ``bench`` (``python -c "import necklace; necklace.print_states(300)"``)."""
    if count < 1 or split not in SPLITS:
        raise ValueError(f"print_states needs a count of at least 1 and a split of {sorted(SPLITS)}, got {count}, "
                         f"{split!r}")
    rng = np.random.default_rng(seed)
    for _ in range(count):
        state = uniform_mask(draw(rng, split), rng, 2, MASK_ID)
        print("".join(NECKLACE.mask_char if t == MASK_ID else ALPHABET[t - 1] for t in state))
