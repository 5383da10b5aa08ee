"""``python -m mi_core bench DOMAIN --puzzles PATH --sampler NAME [--set key=value ...] --json OUT``: decode
every puzzle of a file and score it with the domain's metric (``bench DOMAIN -h`` for its options).

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
from mi_core.bench.decode import decode_all, evaluate, read_inputs
from mi_core.bench.sudoku import evaluate as sudoku_evaluate
from mi_core.bench.sudoku import warm_up, with_default_estimator
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.domains.base import Domain
from mi_core.domains.registry import add_domain_parsers, get_domain
from mi_core.domains.sudoku import read_puzzles
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.models.loading import load_model_described
from mi_core.models.sudoku_mdm import load_sudoku_mdm
from mi_core.options import ArgumentParser, add_force


def parse_sets(pairs: list[str]) -> dict[str, str]:
    """``["k=4", "gamma=0.2"]`` -> ``{"k": "4", "gamma": "0.2"}``; raises ValueError on a malformed pair."""
    params = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise ValueError(f"--set expects key=value, got {pair!r}")
        params[key.strip()] = value.strip()
    return params


def common_options(p: argparse.ArgumentParser, batch_size: int, temperature: float, temperature_help: str) -> None:
    p.add_argument("--sampler", default="sequential", help="a registered decoding strategy")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="strategy parameter")
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the model passes (faster on CPUs with AMX)")
    p.add_argument("--batch-size", type=int, default=batch_size)
    p.add_argument("--temperature", type=float, default=temperature, help=temperature_help)
    p.add_argument("--seed", type=int, default=0)
    add_force(p)


def puzzle_options(p: argparse.ArgumentParser, domain: Domain) -> None:
    """A domain whose inputs are puzzles in a file, scored by its metric."""
    p.add_argument("--puzzles", required=True, type=Path,
                   help=".txt (one puzzle a line, optionally followed by its solution) or .csv with a puzzle column")
    p.add_argument("--limit", type=int, default=None, help="use the first N puzzles")
    default = domain.default_file("model")
    p.add_argument("--model", type=Path if default else str, default=default and Path(default),
                   help="weights file (default: the domain's shipped model)")
    common_options(p, 256, 0.0, "0 = argmax values")


def protein_options(p: argparse.ArgumentParser, domain: Domain) -> None:
    """Proteins are generated (from all-mask, at drawn lengths) and measured against a reference set."""
    p.description = "Generate protein sequences with one sampler and measure them against a reference set."
    p.add_argument("--samples", type=int, default=100, help="how many sequences to generate")
    p.add_argument("--lengths", default="50-100", help="N or LO-HI: lengths drawn uniformly (seeded) from this range")
    p.add_argument("--reference", required=True, type=Path, help="FASTA file; read with the strict rule (non-standard letters skipped)")
    p.add_argument("--reference-split", default="reference", choices=protein_bench.REFERENCE_SPLITS,
                   help="which seeded split of the FASTA is the reference (default: the held-out 'reference' split)")
    p.add_argument("--limit-reference", type=int, default=None, help="use the first N reference sequences")
    p.add_argument("--model", default="auto", help="auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")
    common_options(p, 64, 1.0, "1.0 samples from the model; 0 = argmax (one sequence per length)")


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core bench", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(p, lambda sub, d: (protein_options if d.key == "protein" else puzzle_options)(sub, d),
                       needs="metric")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    if args.domain == "protein":
        return protein_main(args)
    domain = get_domain(args.domain)
    if args.domain == "sudoku9":
        return sudoku_main(args)
    params = parse_sets(args.sets)
    device = pick_device(args.device)
    templates, metric = read_inputs(domain, args.puzzles, args.limit)
    strategy = make_strategy(args.sampler, **params)
    model, description = load_model_described(None if args.model is None else str(args.model), device, domain)
    decode_all(model, templates[:1], strategy, device=device, bf16=args.bf16)  # untimed: start-up costs
    with tqdm(total=len(templates), desc=f"{args.sampler}", unit="puzzle", file=sys.stderr) as bar:
        result, gen = evaluate(model, templates, strategy, metric, batch_size=args.batch_size,
                               temperature=args.temperature, seed=args.seed, device=device, progress=bar.update,
                               bf16=args.bf16)
    result = {"domain": domain.cli_name, "sampler": args.sampler, "params": params,
              "puzzles": display_path(args.puzzles),
              "model": description if model.weights_path is None else display_path(model.weights_path),
              "model_params": model.num_params(), "device": str(device),
              "precision": "bf16" if args.bf16 else "fp32", "seed": args.seed, "temperature": args.temperature,
              "batch_size": args.batch_size, "limit": args.limit, **result, "seconds": gen.seconds,
              "passes": gen.passes}
    return report(result, args.json, drop=("passes",))


def report(result: dict, path: Path | None, drop: tuple[str, ...]) -> int:
    print(json.dumps({k: v for k, v in result.items() if k not in drop}, indent=2))
    if path:
        atomic_write_json(path, result)
    return 0


def sudoku_main(args) -> int:
    params = parse_sets(args.sets)
    device = pick_device(args.device)
    records = read_puzzles(args.puzzles, limit=args.limit)
    strategy = with_default_estimator(make_strategy(args.sampler, **params))
    model = load_sudoku_mdm(args.model, device)
    warm_up(model, records, strategy, device, args.bf16)  # untimed: "seconds" excludes start-up costs
    with tqdm(total=len(records), desc=f"{args.sampler}", unit="puzzle", file=sys.stderr) as bar:
        result = sudoku_evaluate(model, records, strategy, batch_size=args.batch_size, temperature=args.temperature,
                          seed=args.seed, device=device, progress=bar.update, bf16=args.bf16)
    result = {"sampler": args.sampler, "params": params, "puzzles": display_path(args.puzzles),
              "model": display_path(args.model), "model_params": sum(p.numel() for p in model.parameters()),
              "device": str(device), "precision": "bf16" if args.bf16 else "fp32", "seed": args.seed,
              "temperature": args.temperature, "batch_size": args.batch_size, "limit": args.limit,
              "seeding": "per puzzle", **result}
    return report(result, args.json, drop=("passes",))


def protein_main(args) -> int:
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
    return report(result, args.json, drop=("passes", "sequences"))
