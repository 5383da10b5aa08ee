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
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from tqdm import tqdm

from mi_core.decoding.protein_states import (  # noqa: F401  (re-exported: the samplers' old home)
    DEFAULT_FASTA,
    SOURCES,
    ProteinDataConfig,
    decode_to,
    draw_state,
    parse_mix,
    sequence_pool,
    uniform_mask,
)
from mi_core.device import pick_device
from mi_core.domains.protein import PAD_ID
from mi_core.io import check_output_dir
from mi_core.mi.estimator import mdm_features
from mi_core.mi.probe import probe_by_length
from mi_core.options import ArgumentParser
from mi_core.train import shards as common

DEFAULT_MODEL = Path("assets/protein_mdm.safetensors")


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
