"""``python -m mi_core bench sudoku --puzzles PATH --sampler NAME [--set key=value ...] --json OUT``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from tqdm import tqdm

from mi_core.bench.sudoku import evaluate, with_default_estimator
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.domains.sudoku import read_puzzles
from mi_core.models.sudoku_mdm import load_sudoku_mdm

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
    p = argparse.ArgumentParser(prog="python -m mi_core bench", description=__doc__)
    p.add_argument("domain", choices=["sudoku"], help="the domain to benchmark")
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
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.limit is not None and args.limit < 1:
        raise ValueError(f"--limit must be >= 1, got {args.limit}")
    params = parse_sets(args.sets)
    device = pick_device(args.device)
    records = read_puzzles(args.puzzles, limit=args.limit)
    model = load_sudoku_mdm(args.model, device)
    strategy = with_default_estimator(make_strategy(args.sampler, **params))
    with tqdm(total=len(records), desc=f"{args.sampler}", unit="puzzle", file=sys.stderr) as bar:
        result = evaluate(model, records, strategy, batch_size=args.batch_size, temperature=args.temperature,
                          seed=args.seed, device=device, progress=bar.update, bf16=args.bf16)
    result = {"sampler": args.sampler, "params": params, "puzzles": str(args.puzzles), "model": str(args.model),
              "model_params": sum(p.numel() for p in model.parameters()), "device": str(device), "precision": "bf16" if args.bf16 else "fp32", **result}
    summary = {k: v for k, v in result.items() if k != "passes"}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0
