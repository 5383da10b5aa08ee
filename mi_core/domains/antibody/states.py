"""Antibody states for the MI estimator's data and its evaluation: whole chains of the antibodies ``--rows``
with at most ``max_masked`` residues masked (the exact probe costs ``1 + 20 * masked`` passes), in a random
share of CDR3 (``cdr3``), of all three CDRs (``cdrs``) or 15% anywhere (``uniform``). The shipped estimator
was trained on rows 1-70 of the Jain et al. 2017 dev file; rows 71-100 are held out."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from mi_core.domain import ConfigStates, MixedShardConfig, ShardConfig, ensure_masked, mix_option
from mi_core.domains.antibody.sequence import AntibodyChain, read_file, select_rows
from mi_core.domains.protein import MASK_ID
from mi_core.io import ROOT
from mi_core.options import only, option, option_text, redefault

SOURCES = ("cdr3", "cdrs", "uniform")
DEFAULT_CSV = Path("../shared/data/protein/antibodies_jain2017_dev.csv")
TRAIN_ROWS, EVAL_ROWS = "1-70", "71-100"


def own_file(args) -> bool:
    """Whether ``--csv`` is another file than the shipped set (:data:`DEFAULT_CSV`)."""
    try:
        return Path(args.csv).resolve() != DEFAULT_CSV.resolve()
    except OSError:
        return True


def rows_of(args) -> str:
    """``--rows`` as given; left at its default (:data:`EVAL_ROWS`, a split of the shipped set's 100 antibodies) with
    another ``--csv``, all of that file."""
    return args.rows if "rows" in getattr(args, "given", ()) or not own_file(args) else "all"


@dataclass(frozen=True)
class AntibodyDataConfig(MixedShardConfig):
    """Chains of antibodies ``rows`` of ``csv``, at most ``max_masked`` residues masked a state."""

    sources: ClassVar[tuple[str, ...]] = SOURCES
    states: int = redefault(ShardConfig, "states", 64)
    shard_size: int = redefault(ShardConfig, "shard_size", 4)
    max_batch: int = redefault(ShardConfig, "max_batch", 64)
    mix: tuple[float, float, float] = mix_option(SOURCES)
    csv: str = option(str(DEFAULT_CSV), "CSV (name,vh,vl) or FASTA file of antibodies")
    rows: str = option(TRAIN_ROWS, "antibodies used, 1-based A-B (make-estimator-data: the estimator's training "
                       "rows; eval-estimator: the held-out rows, never in its training data)")
    max_masked: int = option(20, "most masked residues a state has", range=(2, 200))

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "csv", str(Path(self.csv)))  # one spelling of the path, as for protein


def subset(positions: list[int], share: float, rng: np.random.Generator, cap: int) -> np.ndarray:
    """``round(share * len)`` of ``positions`` (at least 2, at most ``cap``), drawn without replacement."""
    k = int(np.clip(round(share * len(positions)), min(2, len(positions)), min(cap, len(positions))))
    return rng.choice(np.asarray(positions), size=k, replace=False)


def mask_state(chain: AntibodyChain, source: int, rng: np.random.Generator, cap: int) -> np.ndarray:
    """``chain``'s tokens ``(L,)`` masked as :data:`SOURCES` ``[source]`` says."""
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


class AntibodyStates(ConfigStates):
    """``Domain.states`` of antibodies; see the module docstring."""

    config_cls, sources, data_options = AntibodyDataConfig, SOURCES, AntibodyDataConfig
    eval_options = only(AntibodyDataConfig, "csv", "max_masked", "mix", rows=EVAL_ROWS)
    eval_defaults = {"states": 30, "threshold": 1e-3, "max_batch": AntibodyDataConfig.max_batch}

    def __init__(self, cfg: AntibodyDataConfig):
        self.cfg = cfg
        self.chains = select_rows(read_file(cfg.csv), cfg.rows)
        self.width = max(c.length for c in self.chains)

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

    def overlap(self, trained: dict) -> str | None:
        """The held-out chains whose sequence is one of the chains of ``trained`` (its ``csv`` and ``rows``); None when
        none is, or when ``trained`` is not antibody data or its file is not here."""
        if not trained.get("csv") or "rows" not in trained:
            return None
        path = Path(trained["csv"])
        path = path if path.is_file() else ROOT / path
        try:
            seen = {c.text() for c in select_rows(read_file(path), trained["rows"])}
        except (OSError, ValueError):
            return None
        shared = [c.name for c in self.chains if c.text() in seen]
        if not shared:
            return None
        return (f"{len(shared)} of the {len(self.chains)} held-out chains (rows {self.cfg.rows} of "
                f"{Path(self.cfg.csv).name}, e.g. {shared[0]}) are chains of its training data (rows "
                f"{trained['rows']} of {Path(trained['csv']).name}): give other --rows")

    def about(self) -> str:
        c = self.cfg
        return (f"chains of antibodies {c.rows} of {Path(c.csv).name} with CDR-focused masks "
                f"(mix {','.join(SOURCES)} = {option_text(c.mix)}, at most {c.max_masked} masked)")
