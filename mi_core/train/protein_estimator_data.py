"""Exact-probe training data for a protein MI estimator (the ``protein`` domain of ``make-estimator-data``).

``python -m mi_core make-estimator-data protein --model PATH --fasta PATH --out DIR [--states 320]``

Each state is a window of one sequence of the FASTA file's ``train`` split (``split_records``; evaluation
draws from ``val`` in the same way), of a length drawn in ``min_len..max_len``, masked by one of three
sources (``ProteinMix``), drawn per state:
- ``uniform``: each residue masked at a rate t ~ U(0, 1);
- ``decode_all_masked``: an intermediate state of a decode (sequential or top-k lowest entropy, k in
  {2, 4}, temperature 1) started from the all-masked window;
- ``decode_partial``: the same, started from a ``uniform`` state.
Every state keeps at least ``min_masked`` residues masked (and all of them when the window is shorter).

Shards use the Sudoku shard format (``estimator_data.save_shard`` / ``load_shards``, resumable: shard ``i``
depends only on ``(seed, i)``). States differ in length N, so every per-state tensor is padded to
``max_len`` and a ``length`` tensor ``(S,)`` says how much of it is real: ``tokens`` are padded with
``PAD_ID``, ``masked`` with False, ``hidden``/``probs``/``entropy``/``mi`` with zeros. A padded position is
never masked, so it takes part in no pair: the estimator, its loss and the fidelity metrics give the same
results on the padded state as on the state alone. Features and the probe always run on the real length.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from mi_core.decoding import decode, make_strategy
from mi_core.device import pick_device
from mi_core.domains.protein import MASK_ID, PAD_ID, read_fasta, split_records
from mi_core.io import check_output_dir
from mi_core.mi.estimator import mdm_features
from mi_core.mi.probe import probe_by_length
from mi_core.options import ArgumentParser
from mi_core.train import estimator_data as common

SOURCES = ("uniform", "decode_all_masked", "decode_partial")
DEFAULT_MODEL = Path("assets/protein_mdm.safetensors")
DEFAULT_FASTA = Path("../shared/data/protein/cath-dataset-nonredundant-S40.fa")


@dataclass(frozen=True)
class ProteinDataConfig:
    """``states`` in shards of ``shard_size`` from the ``split`` of ``fasta`` (split by ``split_seed``);
    windows of ``min_len..max_len`` residues; ``mix``: weights of :data:`SOURCES`; ``eps``/``max_batch``:
    the probe's (``eps = 0`` is exact); ``min_masked``: residues every state keeps masked."""

    fasta: str = str(DEFAULT_FASTA)
    split: str = "train"
    split_seed: int = 0
    seed: int = 0
    states: int = 320
    shard_size: int = 8
    min_len: int = 50
    max_len: int = 100
    eps: float = 0.0
    max_batch: int = 128  # the probe's batch: 1.8x faster than 512 for a 75-residue protein MDM state on one CPU thread
    min_masked: int = 10
    mix: tuple[float, float, float] = (0.4, 0.3, 0.3)

    def __post_init__(self):
        if min(self.states, self.shard_size, self.max_batch, self.min_len) < 1:
            raise ValueError("states, shard_size, max_batch and min_len must be positive")
        if self.max_len < self.min_len:
            raise ValueError(f"max_len {self.max_len} is below min_len {self.min_len}")
        if not 2 <= self.min_masked <= self.min_len:
            raise ValueError(f"min_masked must be in 2..min_len ({self.min_len}), got {self.min_masked}")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")
        weights = np.asarray(self.mix, dtype=float)
        if weights.shape != (3,) or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"mix must be three weights >= 0, not all 0 ({', '.join(SOURCES)}), got {self.mix}")

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


def parse_mix(text: str) -> tuple[float, float, float]:
    """``"0.4,0.3,0.3"`` (uniform, decode_all_masked, decode_partial) -> a tuple; ValueError otherwise."""
    try:
        values = tuple(float(p) for p in text.split(","))
    except ValueError:
        values = ()
    if len(values) != 3:
        raise ValueError(f"--mix expects three numbers '{','.join(SOURCES)}', got {text!r}")
    return values


def sequence_pool(fasta: str | Path, split: str, min_len: int, split_seed: int = 0) -> list[np.ndarray]:
    """Token arrays of the ``split`` sequences with at least ``min_len`` residues (file order)."""
    records = split_records(read_fasta(fasta, strict=True), split_seed)[split]
    pool = [r.tokens for r in records if r.length >= min_len]
    if not pool:
        raise ValueError(f"{fasta}: no {split}-split sequence has {min_len} or more residues")
    return pool


def uniform_mask(tokens: np.ndarray, rng: np.random.Generator, minimum: int) -> np.ndarray:
    """``tokens`` ``(L,)`` with each residue masked at a rate t ~ U(0, 1), at least ``minimum`` masked."""
    mask = common.ensure_masked(rng.random(tokens.shape) < rng.random(), min(minimum, len(tokens)), rng)
    return np.where(mask, MASK_ID, tokens)


def decode_to(model, start: np.ndarray, rng: np.random.Generator, minimum: int, device) -> np.ndarray:
    """An intermediate state of a temperature-1 decode from ``start`` ``(L,)``: the first with at most m
    masked residues, m drawn uniformly in ``minimum..masked(start)`` (the one before it when the step
    overshoots below ``minimum``)."""
    masked = int((start == MASK_ID).sum())
    if masked <= minimum:
        return start.copy()
    target = int(rng.integers(minimum, masked + 1))
    k = int(rng.choice([1, 2, 4]))
    strategy = make_strategy("sequential") if k == 1 else make_strategy("topk", k=k)
    state = start
    tokens = torch.as_tensor(start[None], device=device)
    for frame in decode(model, tokens, strategy, temperature=1.0, seed=int(rng.integers(2**31))):
        row = frame.tokens[0].cpu().numpy()
        left = int((row == MASK_ID).sum())
        if left <= target:
            return row if left >= minimum else state
        state = row
    return state


def draw_state(model, pool: list[np.ndarray], cfg: ProteinDataConfig, rng: np.random.Generator,
               device) -> tuple[np.ndarray, int]:
    """One state ``(L,)`` int64 and its source index: a seeded window of a pool sequence, then masked."""
    seq = pool[int(rng.integers(len(pool)))]
    length = int(rng.integers(cfg.min_len, min(cfg.max_len, len(seq)) + 1))
    offset = int(rng.integers(0, len(seq) - length + 1))
    window = seq[offset:offset + length]
    weights = np.asarray(cfg.mix, dtype=float)
    source = int(rng.choice(len(SOURCES), p=weights / weights.sum()))
    if source == 0:
        tokens = uniform_mask(window, rng, cfg.min_masked)
    elif source == 1:
        tokens = decode_to(model, np.full_like(window, MASK_ID), rng, cfg.min_masked, device)
    else:
        tokens = decode_to(model, uniform_mask(window, rng, cfg.min_masked), rng, cfg.min_masked, device)
    return tokens.astype(np.int64), source


def pad_state(row: dict[str, torch.Tensor], width: int) -> dict[str, torch.Tensor]:
    """Pad one state's tensors (leading axes of length N) to ``width`` (see the module docstring)."""
    n = row["tokens"].shape[0]
    extra = width - n
    out = dict(row)
    out["tokens"] = F.pad(row["tokens"], (0, extra), value=PAD_ID)
    out["masked"] = F.pad(row["masked"], (0, extra), value=False)
    out["entropy"] = F.pad(row["entropy"], (0, extra))
    for key in ("hidden", "probs"):
        out[key] = F.pad(row[key], (0, 0, 0, extra))
    out["mi"] = F.pad(row["mi"], (0, extra, 0, extra))
    out["length"] = torch.tensor(n)
    return out


def state_row(model, tokens: np.ndarray, source: int, cfg: ProteinDataConfig, device,
              probed: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """One state's MDM features (one pass at its own length), exact probe and source, padded to ``max_len``.

    ``probed``: the state's probe (:func:`mi_core.train.estimator_data.probe_state` keys) when already run."""
    t = torch.as_tensor(tokens, device=device)
    hidden, probs, entropy, masked = (x[0] for x in mdm_features(model, t[None]))
    probed = probed if probed is not None else common.probe_state(model, t, cfg.eps, cfg.max_batch)
    row = {"tokens": t, "hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked,
           "source": torch.tensor(source), **probed}
    return pad_state({k: v.detach().cpu() for k, v in row.items()}, cfg.max_len)


def probe_drawn(model, drawn: list[tuple[np.ndarray, int]], cfg: ProteinDataConfig, device) -> list[dict]:
    """The probe of each drawn state, batched per distinct length (:func:`probe_by_length`)."""
    results = probe_by_length(model, [torch.as_tensor(t, device=device) for t, _ in drawn], eps=cfg.eps,
                              max_batch=cfg.max_batch)
    return [{"mi": r.mi.float(), "error_bound": r.error_bound.max().float(), "passes": torch.tensor(r.passes),
             "seconds": torch.tensor(r.seconds)} for r in results]


def make_shard(model, pool: list[np.ndarray], index: int, cfg: ProteinDataConfig, device,
               on_state=None) -> dict[str, torch.Tensor]:
    """Shard ``index``: its states (seeded by ``(cfg.seed, index)``), features and exact MI, padded.

    All the shard's states are drawn first (the same states, in the same order, as drawing and probing
    one at a time), then probed together, one batched call per distinct length."""
    rng = np.random.default_rng([cfg.seed, index])
    count = min(cfg.shard_size, cfg.states - index * cfg.shard_size)
    drawn = [draw_state(model, pool, cfg, rng, device) for _ in range(count)]
    rows = [state_row(model, tokens, source, cfg, device, probed)
            for (tokens, source), probed in zip(drawn, probe_drawn(model, drawn, cfg, device))]
    for row in rows if on_state else ():
        on_state(int(row["passes"]))
    return {k: torch.stack([r[k] for r in rows]).contiguous() for k in rows[0]}


def command_line(cfg: ProteinDataConfig, model_path: Path, out: Path) -> str:
    """The ``make-estimator-data protein`` command that writes exactly these shards."""
    return (f"python -m mi_core make-estimator-data protein --model {model_path} --fasta {cfg.fasta} --out {out} "
            f"--states {cfg.states} --shard-size {cfg.shard_size} --min-len {cfg.min_len} --max-len {cfg.max_len} "
            f"--min-masked {cfg.min_masked} --eps {cfg.eps:g} --max-batch {cfg.max_batch} "
            f"--mix {','.join(f'{w:g}' for w in cfg.mix)} --seed {cfg.seed}")


def run(model, model_path: Path, cfg: ProteinDataConfig, out: Path, device, log=print) -> dict:
    """Write every missing shard of ``cfg`` under ``out``; return the data summary."""
    common.write_manifest(out, cfg, model_path, model, command=command_line(cfg, model_path, out),
                          sources=SOURCES, domain="protein")
    todo = [i for i in range(cfg.shards) if not common.shard_path(out, i).is_file()]
    done_states = cfg.states - sum(min(cfg.shard_size, cfg.states - i * cfg.shard_size) for i in todo)
    log(f"{out}: {cfg.shards - len(todo)} of {cfg.shards} shards already written")
    if todo:
        pool = sequence_pool(cfg.fasta, cfg.split, cfg.min_len, cfg.split_seed)
        with tqdm(total=cfg.states, initial=done_states, unit="state", desc="probe", file=sys.stderr) as bar:
            for i in todo:
                shard = make_shard(model, pool, i, cfg, device, on_state=lambda _: bar.update(1))
                common.save_shard(shard, common.shard_path(out, i))
    return common.load_shards(out)[1]["summary"]


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core make-estimator-data protein", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the frozen protein MDM whose MI is learned")
    p.add_argument("--fasta", type=Path, default=DEFAULT_FASTA, help="FASTA file; states come from its train split")
    p.add_argument("--out", type=Path, required=True, help="shard directory (outside the repository's tracked files)")
    d = ProteinDataConfig()
    for name in ("states", "shard_size", "min_len", "max_len", "min_masked", "max_batch", "seed"):
        p.add_argument(f"--{name.replace('_', '-')}", type=int, default=getattr(d, name))
    p.add_argument("--eps", type=float, default=d.eps, help="probe pruning threshold (0 = no pruning)")
    p.add_argument("--mix", default=",".join(f"{w:g}" for w in d.mix), help=f"weights of {','.join(SOURCES)}")
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_output_dir(args.out)
    cfg = ProteinDataConfig(fasta=str(args.fasta), seed=args.seed, states=args.states, shard_size=args.shard_size,
                            min_len=args.min_len, max_len=args.max_len, eps=args.eps, max_batch=args.max_batch,
                            min_masked=args.min_masked, mix=parse_mix(args.mix))
    if args.threads:
        torch.set_num_threads(args.threads)
    from mi_core.models.protein_mdm import load_protein_mdm

    device = pick_device(args.device)
    model = load_protein_mdm(args.model, device)
    if cfg.max_len > model.max_len:
        raise ValueError(f"--max-len {cfg.max_len} is longer than the {model.max_len} residues {args.model} takes")
    start = time.time()
    summary = run(model, args.model, cfg, args.out, device, log=lambda m: print(m, file=sys.stderr, flush=True))
    summary["wall_seconds_this_run"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=2))
    return 0
