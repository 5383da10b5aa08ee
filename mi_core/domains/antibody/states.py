"""Antibody states for the MI estimator's data and its evaluation: whole chains with CDR-focused masks.

Three sources (:data:`SOURCES`), each masking at most ``max_masked`` residues of one chain (the exact
probe costs ``1 + 20 * masked`` AntiBERTy passes, ~90 ms each on one CPU thread):

* ``cdr3``: a random share (uniform in 0.5..1) of the chain's CDR3, at least two residues;
* ``cdrs``: a random share of the residues of all three CDRs;
* ``uniform``: 15% of the chain, anywhere (the eval-model masking).

Chains come from a CSV (``name,vh,vl``) or FASTA file, only those of the antibodies ``--rows`` (1-based,
by antibody): the shipped estimator was trained on rows 1-70 of the Jain et al. 2017 dev file and is
evaluated on rows 71-100, never seen in training.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from mi_core.domain import MixedShardConfig, ensure_masked, parse_mix
from mi_core.domains.antibody.sequence import AntibodyChain, read_file, select_rows
from mi_core.domains.protein import MASK_ID
from mi_core.options import option, seed

SOURCES = ("cdr3", "cdrs", "uniform")
DEFAULT_CSV = Path("../shared/data/protein/antibodies_jain2017_dev.csv")
TRAIN_ROWS, EVAL_ROWS = "1-70", "71-100"


@dataclass(frozen=True)
class AntibodyDataConfig(MixedShardConfig):
    """``states`` in shards of ``shard_size`` from the chains of antibodies ``rows`` of ``csv``;
    ``mix``: weights of :data:`SOURCES`; ``max_masked``: most masked residues a state; ``eps``/``max_batch``:
    the probe's (``eps = 0`` is exact)."""

    sources: ClassVar[tuple[str, ...]] = SOURCES
    states: int = 64
    shard_size: int = 4
    max_batch: int = 64
    csv: str = str(DEFAULT_CSV)
    rows: str = TRAIN_ROWS
    max_masked: int = 20

    def __post_init__(self):
        super().__post_init__()
        if not 2 <= self.max_masked <= 200:
            raise ValueError(f"max_masked must be in 2..200, got {self.max_masked}")


def subset(positions: list[int], share: float, rng: np.random.Generator, cap: int) -> np.ndarray:
    """``round(share * len)`` of ``positions`` (at least 2, at most ``cap``), drawn without replacement."""
    k = int(np.clip(round(share * len(positions)), min(2, len(positions)), min(cap, len(positions))))
    return rng.choice(np.asarray(positions), size=k, replace=False)


def mask_state(chain: AntibodyChain, source: int, rng: np.random.Generator, cap: int) -> np.ndarray:
    """``chain``'s tokens ``(L,)`` masked as source ``source`` of :data:`SOURCES` says."""
    if source == 0:
        chosen = subset(chain.positions("cdr3"), rng.uniform(0.5, 1.0), rng, cap)
    elif source == 1:
        chosen = subset(chain.positions("cdrs"), rng.uniform(0.2, 1.0), rng, cap)
    else:
        chosen = subset(list(range(chain.length)), 0.15, rng, cap)
    mask = np.zeros(chain.length, dtype=bool)
    mask[chosen] = True
    mask = ensure_masked(mask, 2, rng)
    return np.where(mask, MASK_ID, chain.tokens).astype(np.int64)


@dataclass
class ChainOptions:
    csv: Path = option(DEFAULT_CSV, "CSV (name,vh,vl) or FASTA file of antibodies")
    max_masked: int = option(AntibodyDataConfig.max_masked, "most masked residues a state has", range=(1, 100_000))
    mix: str = option(AntibodyDataConfig().mix_text, f"weights of {','.join(SOURCES)}")


@dataclass
class DataOptions(ChainOptions):
    """``make-estimator-data antibody``: the chains probed, and how."""

    rows: str = option(AntibodyDataConfig.rows, "antibodies used, 1-based A-B (default: the training rows)")
    states: int = option(AntibodyDataConfig.states, "states to probe", range=(1, 1_000_000))
    shard_size: int = option(AntibodyDataConfig.shard_size, "states per shard file", range=(1, 1_000_000))
    eps: float = option(AntibodyDataConfig.eps, "probe pruning threshold (0 = no pruning)", range=(0, 1))
    max_batch: int = option(AntibodyDataConfig.max_batch, "most sequences per forward pass", range=(1, 65_536))
    seed: int = seed()


@dataclass
class HeldOutOptions(ChainOptions):
    """``eval-estimator antibody``: chains of the held-out rows."""

    rows: str = option(EVAL_ROWS, "antibodies to evaluate on, 1-based A-B (default: the held-out rows, never in "
                       "the shipped estimator's training data)")


class AntibodyStates:
    """The antibody state source of estimator data (``Domain.states``); see the module docstring."""

    config_cls = AntibodyDataConfig
    sources = SOURCES
    eval_defaults = {"states": 30, "threshold": 1e-3, "max_batch": AntibodyDataConfig.max_batch}

    def __init__(self, cfg: AntibodyDataConfig):
        self.cfg = cfg
        self.chains = select_rows(read_file(cfg.csv), cfg.rows)
        self.width = max(c.length for c in self.chains)

    data_options = DataOptions

    @staticmethod
    def config_from_args(args) -> AntibodyDataConfig:
        return AntibodyDataConfig(csv=str(args.csv), rows=args.rows, seed=args.seed, states=args.states,
                                  shard_size=args.shard_size, max_masked=args.max_masked, eps=args.eps,
                                  max_batch=args.max_batch, mix=parse_mix(args.mix, SOURCES))

    def options(self) -> str:
        c = self.cfg
        return (f"--csv {c.csv} --rows {c.rows} --states {c.states} --shard-size {c.shard_size} "
                f"--max-masked {c.max_masked} --eps {c.eps:g} --max-batch {c.max_batch} "
                f"--mix {c.mix_text} --seed {c.seed}")

    def check(self, model) -> None:
        if self.width > model.max_len:
            raise ValueError(f"a chain of {self.width} residues is longer than the {model.max_len} the model takes")

    def draw(self, model, rng: np.random.Generator, count: int, device) -> tuple[list[np.ndarray], list[int]]:
        weights = np.asarray(self.cfg.mix, dtype=float)
        out, kinds = [], []
        for _ in range(count):
            chain = self.chains[int(rng.integers(len(self.chains)))]
            source = int(rng.choice(len(SOURCES), p=weights / weights.sum()))
            out.append(mask_state(chain, source, rng, self.cfg.max_masked))
            kinds.append(source)
        return out, kinds

    # -- held-out states (``eval-estimator antibody``) --------------------------------------------------
    eval_options = HeldOutOptions

    @staticmethod
    def held_out(args) -> AntibodyStates:
        return AntibodyStates(AntibodyDataConfig(csv=str(args.csv), rows=args.rows, max_masked=args.max_masked,
                                                 mix=parse_mix(args.mix, SOURCES)))

    def info(self) -> dict:
        c = self.cfg
        mix = c.mix_text
        return {"csv": c.csv, "rows": c.rows, "max_masked": c.max_masked, "mix": mix,
                "about": f"chains of antibodies {c.rows} of {Path(c.csv).name} with CDR-focused masks "
                         f"(mix {','.join(SOURCES)} = {mix}, at most {c.max_masked} masked)"}
