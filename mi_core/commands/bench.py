"""``python -m mi_core bench sudoku --puzzles PATH --sampler NAME [--set key=value ...] --json OUT``.

``python -m mi_core bench protein --samples N --lengths 50-100 --reference FASTA --sampler NAME [--set ...]
--json OUT``: generate N sequences and measure them against a reference set (see ``mi_core.bench.protein``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tqdm import tqdm

from mi_core.bench import protein as protein_bench
from mi_core.bench.sudoku import evaluate, warm_up, with_default_estimator
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.domains.sudoku import read_puzzles
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.models.sudoku_mdm import load_sudoku_mdm
from mi_core.options import ArgumentParser, add_force

DEFAULT_MODEL = Path("assets/sudoku_mdm.safetensors")


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["k=4", "gamma=0.2"]`` -> ``{"k": "4", "gamma": "0.2"}``; raises ValueError on a malformed pair."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--set expects key=value, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core bench", description=__doc__)
    p.add_argument("domain", choices=["sudoku", "protein"], help="the domain to benchmark ('bench protein -h' for its options)")
    p.add_argument("--puzzles", required=True, type=Path, help=".txt (one puzzle a line) or .csv with a puzzle column")
    p.add_argument("--limit", type=int, default=None, help="use the first N puzzles")
    p.add_argument("--sampler", default="sequential", help="a registered decoding strategy")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="strategy parameter")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the model passes (faster on CPUs with AMX)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--temperature", type=float, default=0.0, help="0 = argmax values")
    p.add_argument("--seed", type=int, default=0)
    add_force(p)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["protein"]:
        return protein_main(argv[1:])
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    params = parse_sets(args.sets)
    device = pick_device(args.device)
    records = read_puzzles(args.puzzles, limit=args.limit)
    strategy = with_default_estimator(make_strategy(args.sampler, **params))
    model = load_sudoku_mdm(args.model, device)
    warm_up(model, records, strategy, device, args.bf16)  # untimed: "seconds" excludes start-up costs
    with tqdm(total=len(records), desc=f"{args.sampler}", unit="puzzle", file=sys.stderr) as bar:
        result = evaluate(model, records, strategy, batch_size=args.batch_size, temperature=args.temperature,
                          seed=args.seed, device=device, progress=bar.update, bf16=args.bf16)
    result = {"sampler": args.sampler, "params": params, "puzzles": display_path(args.puzzles),
              "model": display_path(args.model), "model_params": sum(p.numel() for p in model.parameters()),
              "device": str(device), "precision": "bf16" if args.bf16 else "fp32", "seed": args.seed,
              "temperature": args.temperature, "batch_size": args.batch_size, "limit": args.limit,
              "seeding": "per puzzle", **result}
    summary = {k: v for k, v in result.items() if k != "passes"}
    print(json.dumps(summary, indent=2))
    if args.json:
        atomic_write_json(args.json, result)
    return 0


def build_protein_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core bench protein",
                                description="Generate protein sequences with one sampler and measure them against a reference set.")
    p.add_argument("--samples", type=int, default=100, help="how many sequences to generate")
    p.add_argument("--lengths", default="50-100", help="N or LO-HI: lengths drawn uniformly (seeded) from this range")
    p.add_argument("--reference", required=True, type=Path, help="FASTA file; read with the strict rule (non-standard letters skipped)")
    p.add_argument("--reference-split", default="reference", choices=protein_bench.REFERENCE_SPLITS,
                   help="which seeded split of the FASTA is the reference (default: the held-out 'reference' split)")
    p.add_argument("--limit-reference", type=int, default=None, help="use the first N reference sequences")
    p.add_argument("--sampler", default="sequential", help="a registered decoding strategy")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="strategy parameter")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--model", default="auto", help="auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the model passes")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--temperature", type=float, default=1.0, help="1.0 samples from the model; 0 = argmax (one sequence per length)")
    p.add_argument("--seed", type=int, default=0)
    add_force(p)
    return p


def protein_main(argv: list[str]) -> int:
    args = build_protein_parser().parse_args(argv)
    check_output(args.json, args.force)
    params = parse_sets(args.sets)
    lo, hi = protein_bench.parse_lengths(args.lengths)
    lengths = protein_bench.draw_lengths(args.samples, lo, hi, args.seed)
    strategy = make_strategy(args.sampler, **params)
    reference = protein_bench.reference_set(args.reference, args.reference_split, args.limit_reference)
    device = pick_device(args.device)
    model, info = protein_bench.load_model(args.model, device)
    protein_bench.attach_estimator(strategy, info)
    protein_bench.warm_up(model, lengths, strategy, device, args.bf16)  # untimed
    with tqdm(total=len(lengths), desc=f"{args.sampler}", unit="seq", file=sys.stderr) as bar:
        result = protein_bench.evaluate(model, lengths, reference, strategy, temperature=args.temperature, seed=args.seed,
                                        batch_size=args.batch_size, device=device, bf16=args.bf16, progress=bar.update)
    result = {"sampler": args.sampler, "params": params, "temperature": args.temperature, "lengths": args.lengths,
              "seed": args.seed, "samples": args.samples, "batch_size": args.batch_size,
              "limit_reference": args.limit_reference, "reference": display_path(args.reference),
              "reference_split": args.reference_split, "model": protein_bench.info_for_json(info), "device": str(device),
              "precision": "bf16" if args.bf16 else "fp32", **result}
    print(json.dumps({k: v for k, v in result.items() if k not in ("passes", "sequences")}, indent=2))
    if args.json:
        atomic_write_json(args.json, result)
    return 0
