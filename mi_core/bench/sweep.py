"""``python -m mi_core sweep sudoku --puzzles PATH [--limit N] --json OUT``: a grid of samplers on one puzzle set.

Writes a JSON list of rows (``sampler``, ``params``, ``n``, ``accuracy``, ``cell_accuracy``, ``mean_passes``,
``seconds``, ``set`` and the settings: ``seed``, ``batch_size``, ``limit``, ``level``, ``precision``) and
nothing else unless asked: ``--markdown FILE`` writes a Markdown table into a section of FILE named after
the puzzle set. An existing ``--json`` is only replaced with ``--force`` (``--merge`` adds to its rows).
The frontier plot is drawn from the rows by ``python -m mi_lens_app.sweep_plot ROWS.json OUT.html``.

``python -m mi_core sweep protein --reference FASTA --samples N --lengths 50-100 --json OUT --name NAME``: the
same for protein generation (see :func:`protein_main`): rows with ``sampler``, ``params``, ``n``,
``mean_passes``, ``jsd_aa``, ``jsd_dipeptide``, ``diversity``; the frontier is JSD against mean passes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shlex
import sys
from pathlib import Path

from tqdm import tqdm

from mi_core.bench import protein as protein_bench
from mi_core.bench.report import frontier_text, markdown_table, update_section, write_json
from mi_core.bench.scale import protein_cells, sudoku_cells
from mi_core.bench.sudoku import evaluate, warm_up, with_default_estimator
from mi_core.decoding import STRATEGIES, make_strategy
from mi_core.device import pick_device
from mi_core.domains.registry import add_domain_parsers, get_domain
from mi_core.domains.sudoku import read_puzzles
from mi_core.io import check_output, display_path
from mi_core.mi.estimator import SHIPPED
from mi_core.models.loading import load_model
from mi_core.options import ArgumentParser, add_force
from mi_core.scale.engine import add_engine_options, engine_from_args

DEFAULT_GRID = [
    "sequential",
    "topk:k=2,4,7",
    "top_margin:k=2,4,7",
    "eb:gamma=0.1,0.2,0.5,1",
    "threshold:tau=0.7,0.9,0.99",
    "mask_predict:steps=10,20",
    "mi:gamma=0.1,0.3,0.6,1;lam=0.5,1,2",
]


def parse_grid_spec(spec: str) -> list[tuple[str, dict[str, str]]]:
    """``"mi:gamma=0.1,0.3;lam=1,2"`` -> every (name, params) combination of the listed values.

    Raises:
        ValueError: a malformed spec or an unknown sampler.
    """
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in STRATEGIES:
        raise ValueError(f"unknown sampler {name!r} in grid {spec!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    axes = []
    for part in filter(None, (p.strip() for p in rest.split(";"))):
        key, sep, values = part.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not vals:
            raise ValueError(f"grid {spec!r}: expected key=v1,v2,... but got {part!r}")
        axes.append([(key.strip(), v) for v in vals])
    return [(name, dict(combo)) for combo in itertools.product(*axes)]


def grid_configs(grid: list[str], samplers: str | None) -> list[tuple[str, dict[str, str]]]:
    """Every (name, params) point of the grid specs, only of the comma-separated ``samplers`` when given."""
    configs = [c for spec in grid for c in parse_grid_spec(spec)]
    keep = samplers and {s.strip() for s in samplers.split(",")}
    return [c for c in configs if c[0] in keep] if keep else configs


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` rows with those of the same set, sampler and params replaced by ``new`` ones, then the rest of ``new``."""

    def key(r):
        return r.get("set"), r["sampler"], json.dumps(r["params"], sort_keys=True)

    fresh = {key(r): r for r in new}
    kept = [fresh.pop(key(r), r) for r in old]
    return kept + list(fresh.values())


def read_rows(path: Path) -> list[dict]:
    """The rows already in a sweep JSON (for ``--merge``); [] when the file does not exist.

    Raises:
        ValueError: the file is not JSON, or not a list of rows with ``sampler`` and ``params``.
    """
    if not path.exists():
        return []
    if not path.is_file():
        raise ValueError(f"--merge: {path} is not a file")
    try:
        rows = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as err:
        raise ValueError(f"--merge: {path} is not valid JSON ({err})") from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "sampler" in r and isinstance(r.get("params"), dict) for r in rows):
        raise ValueError(f"--merge: {path} must hold a JSON list of sweep rows (objects with sampler and params), "
                         f"found {type(rows).__name__}")
    return rows


def check_outputs(args) -> list[dict]:
    """Refuse unwritable outputs before any work; the rows to merge with (``--merge``), else []."""
    old = read_rows(args.json) if args.merge else []
    check_output(args.json, args.force or args.merge, "--json")
    if args.markdown is not None and str(args.markdown) != "-":
        check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    return old


def add_output_options(p) -> None:
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--merge", action="store_true",
                   help="add to the rows already in --json (a rerun of a sampler and params replaces its row)")
    p.add_argument("--markdown", type=Path, default=None,
                   help="also write a table into this report file's section for the set (e.g. BENCHMARKS.md)")
    add_force(p)


def with_estimators(configs: list[tuple[str, dict]], estimator: str | None) -> tuple[list, list]:
    """Strategies of the grid points; those that read an MI estimator and have none read ``estimator`` (the
    shipped one trained on the model), or are skipped with a note when the domain has none (the 4x4 oracle)."""
    kept, strategies = [], []
    for name, params in configs:
        strategy = make_strategy(name, **params)
        if protein_bench.lacks_mi_source(strategy):
            if estimator is None:
                print(f"note: skipping {name} {params}: this domain has no MI estimator", file=sys.stderr)
                continue
            strategy = with_default_estimator(strategy, estimator)
        kept.append((name, params))
        strategies.append(strategy)
    if not strategies:
        raise ValueError("the grid is empty: every sampler in it needs an MI estimator this domain lacks")
    return kept, strategies


def sudoku_options(p, domain) -> None:
    p.add_argument("--puzzles", required=True, type=Path)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--level", default=None, help="only puzzles of this level (CSV files with a level column)")
    p.add_argument("--name", default=None, help="name of the puzzle set in the report (default: file stem + level)")
    p.add_argument("--grid", action="append", default=None, metavar="SPEC",
                   help='e.g. "topk:k=2,4,7" or "mi:gamma=0.1,0.3;lam=1,2" (repeatable; replaces the default grid)')
    p.add_argument("--samplers", default=None, help="comma-separated: keep only these samplers of the grid")
    add_output_options(p)
    p.add_argument("--model", type=Path, default=domain.default_file("model") and Path(domain.default_file("model")),
                   help="weights (default: the domain's shipped model)")
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the model passes (faster on CPUs with AMX)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    add_engine_options(p)


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core sweep", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(p, lambda sub, d: (protein_options if d.key == "protein" else sudoku_options)(sub, d),
                       needs="metric", when=lambda d: d.layout == "grid" or d.key == "protein")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    if args.domain == "protein":
        return protein_main(args, argv)
    old_rows = check_outputs(args)
    engine = engine_from_args(args)  # Ray missing or a bad setting: one line before any work

    configs = grid_configs(args.grid or DEFAULT_GRID, args.samplers)
    if not configs:
        raise ValueError("the grid is empty after --samplers filtering")
    domain = get_domain(args.domain)
    records = read_puzzles(args.puzzles)
    if any(len(r.puzzle) != domain.cells for r in records):
        raise ValueError(f"{args.puzzles} holds puzzles of another size than {domain.label} ({domain.cells} cells)")
    if args.level:
        records = [r for r in records if (r.level or "").lower() == args.level.lower()]
        if not records:
            raise ValueError(f"no puzzles of level {args.level!r} in {args.puzzles}")
    records = records[: args.limit] if args.limit is not None else records
    set_name = args.name or (args.puzzles.stem + (f"_{args.level}" if args.level else ""))
    configs, strategies = with_estimators(configs, SHIPPED if domain.estimator_default else None)  # fails fast
    device = pick_device(args.device)
    model = load_model(None if args.model is None else str(args.model), device, domain=args.domain)
    cmd = "python -m mi_core sweep " + " ".join(argv)
    rows = []
    if engine.engine == "ray" and domain.key != "sudoku9":
        raise ValueError(f"--engine ray runs Sudoku 9x9 and protein sweeps; run {domain.cli_name} with --engine local")
    cells = sudoku_cells(configs, records, args, engine) if engine.engine == "ray" else None  # a cell per actor task
    for strategy in strategies if cells is None else []:  # untimed: row seconds exclude loading an estimator
        warm_up(model, records, strategy, device, args.bf16)
    for n, ((name, params), strategy) in enumerate(zip(configs, strategies)):
        if cells is not None:
            res = cells[n]
        else:
            with tqdm(total=len(records), desc=f"{name} {params}", unit="puzzle", file=sys.stderr, leave=False) as bar:
                res = evaluate(model, records, strategy, batch_size=args.batch_size, seed=args.seed, device=device,
                               progress=bar.update, bf16=args.bf16)
            res.pop("passes")
        rows.append({"set": set_name, "sampler": name, "params": params, **res, "precision": "bf16" if args.bf16 else "fp32",
                     "puzzles": display_path(args.puzzles), "level": args.level, "limit": args.limit, "seed": args.seed,
                     "batch_size": args.batch_size, "temperature": 0.0,
                     "model": None if args.model is None else display_path(args.model), "command": cmd})
        print(f"{set_name} {name} {params}: accuracy {res['accuracy']:.3f}, mean passes {res['mean_passes']:.1f}",
              file=sys.stderr)
    if args.merge:
        rows = merge_rows(old_rows, rows)
    write_json(rows, args.json)
    if args.markdown is not None and str(args.markdown) != "-":
        table = markdown_table(rows, [("sampler", "sampler"), ("params", "params"), ("n", "n"),
                                      ("accuracy", "accuracy"), ("cell_accuracy", "cell acc."),
                                      ("mean_passes", "mean passes"), ("seconds", "seconds")])
        update_section(f"sweep-{set_name}", f"### Sweep: {set_name} (n={_n_text(rows)}, device {device.type}, {'bf16' if args.bf16 else 'fp32'} forward passes; seconds after an untimed warm-up decode, each batch read back before the clock stops)\n\n"
                       + _commands(rows, cmd) + f"{table}\n\nFrontier (accuracy vs passes): {frontier_text(rows)}\n", args.markdown)
    return 0


PROTEIN_GRID = [
    "sequential",
    "topk:k=4,8,12",
    "eb:gamma=1,2,4",
    "threshold:tau=0.5,0.7,0.9",
    "top_margin:k=8,12",
    "mask_predict",
    "mi:gamma=1,2,4;lam=1",
    "random:steps=10",
]


def protein_configs(grid: list[str], samplers: str | None, estimator: Path | None) -> list[tuple[str, dict, object]]:
    """``(name, params, strategy)`` of each grid point; ``mi`` points without an MI source read ``estimator``
    (see ``mi_core.bench.protein.estimator_for``), or are skipped with a note on stderr when there is none."""
    out = []
    for name, params in grid_configs(grid, samplers):
        strategy = make_strategy(name, **params)  # fail fast on bad params
        if protein_bench.lacks_mi_source(strategy):
            if estimator is None or not estimator.is_file():
                print(f"note: skipping {name} {params}: no MI estimator (--estimator PATH"
                      + (f"; {estimator} not found" if estimator else "") + ")", file=sys.stderr)
                continue
            strategy.estimator = str(estimator)
        out.append((name, params, strategy))
    if not out:
        raise ValueError("the protein grid is empty after --samplers filtering and skipped mi rows")
    return out


def protein_options(p, domain) -> None:
    p.description = "A grid of samplers generating protein sequences, measured against a reference set."
    p.add_argument("--reference", required=True, type=Path, help="FASTA file (strict read; its 'reference' split is used)")
    p.add_argument("--reference-split", default="reference", choices=protein_bench.REFERENCE_SPLITS)
    p.add_argument("--limit-reference", type=int, default=None)
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--lengths", default="50-100")
    p.add_argument("--name", default=None, help="name of the run in the report (default: FASTA stem)")
    p.add_argument("--grid", action="append", default=None, metavar="SPEC", help="as for sudoku; replaces the default protein grid")
    p.add_argument("--samplers", default=None, help="comma-separated: keep only these samplers of the grid")
    p.add_argument("--estimator", type=Path, default=None, help="MI estimator weights for the mi rows (default: the shipped one for the protein MDM)")
    add_output_options(p)
    p.add_argument("--model", default="auto", help="auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    add_engine_options(p)


def protein_main(args, argv: list[str]) -> int:
    old_rows = check_outputs(args)
    engine = engine_from_args(args)  # Ray missing or a bad setting: one line before any work

    lo, hi = protein_bench.parse_lengths(args.lengths)
    lengths = protein_bench.draw_lengths(args.samples, lo, hi, args.seed)
    reference = protein_bench.reference_set(args.reference, args.reference_split, args.limit_reference)
    set_name = args.name or args.reference.stem
    device = pick_device(args.device)
    model, info = protein_bench.load_model(args.model, device)
    configs = protein_configs(args.grid or PROTEIN_GRID, args.samplers, protein_bench.estimator_for(info, args.estimator))
    precision = "bf16" if args.bf16 else "fp32"
    cmd = "python -m mi_core sweep " + shlex.join(argv)  # quoted: grid specs hold ';'
    rows = []
    cells = protein_cells(configs, lengths, reference, args, engine) if engine.engine == "ray" else None
    if configs and cells is None:
        protein_bench.warm_up(model, lengths, configs[0][2], device, args.bf16)
    for n, (name, params, strategy) in enumerate(configs):
        if cells is not None:
            res = cells[n]
        else:
            with tqdm(total=len(lengths), desc=f"{name} {params}", unit="seq", file=sys.stderr, leave=False) as bar:
                res = protein_bench.evaluate(model, lengths, reference, strategy, temperature=args.temperature,
                                             seed=args.seed, batch_size=args.batch_size, device=device, bf16=args.bf16,
                                             progress=bar.update)
            for key in ("passes", "sequences"):
                res.pop(key)
        rows.append({"set": set_name, "sampler": name, "params": params, **res, "temperature": args.temperature,
                     "lengths": args.lengths, "model": protein_bench.info_for_json(info), "precision": precision, "seed": args.seed,
                     "samples": args.samples, "batch_size": args.batch_size, "reference": display_path(args.reference),
                     "reference_split": args.reference_split, "limit_reference": args.limit_reference, "command": cmd})
        print(f"{set_name} {name} {params}: jsd_dipeptide {res['jsd_dipeptide']:.4f}, jsd_aa {res['jsd_aa']:.4f}, "
              f"mean passes {res['mean_passes']:.1f}", file=sys.stderr)
    if args.merge:
        rows = merge_rows(old_rows, rows)
    write_json(rows, args.json)
    if args.markdown is not None and str(args.markdown) != "-":
        _protein_section(rows, set_name, device, precision, cmd, args.markdown)
    return 0


def _protein_section(rows: list[dict], set_name: str, device, precision: str, cmd: str, markdown: Path) -> None:
    """The sweep's Markdown table (diversity flattened into columns) into its section of ``markdown``."""
    flat = [{**r, "identity": r["diversity"]["mean_identity"], "unique": r["diversity"]["unique_fraction"],
             "ref_identity": r["diversity"].get("reference_mean_identity", float("nan")),
             **{k: f"{r[k]:.4f}" for k in ("jsd_dipeptide", "jsd_aa", "jsd_dipeptide_floor", "jsd_aa_floor")},
             "mean_passes": f"{r['mean_passes']:.1f}", "seconds": f"{r['seconds']:.0f}"} for r in rows]
    table = markdown_table(flat, [("sampler", "sampler"), ("params", "params"), ("n", "n"), ("mean_passes", "mean passes"),
                                  ("jsd_dipeptide", "JSD dipeptide (bits)"), ("jsd_aa", "JSD aa (bits)"),
                                  ("jsd_dipeptide_floor", "floor dipeptide"), ("jsd_aa_floor", "floor aa"),
                                  ("identity", "mean identity"), ("ref_identity", "ref. identity"),
                                  ("unique", "unique"), ("seconds", "seconds")])
    temps = ", ".join(sorted({str(r.get("temperature")) for r in rows}))
    update_section(f"sweep-protein-{set_name}",
                   f"### Protein sweep: {set_name} (n={_n_text(rows)}, temperature {temps}, device {device.type}, {precision} forward passes)\n\n"
                   + _commands(rows, cmd) + f"{table}\n\nIdentity: mean pairwise position-wise identity (unaligned, over the shorter length); "
                   "lower is more diverse; ref. identity is the reference set's own. Floor: the JSD of reference "
                   "sequences cut to the generated lengths (sampling noise alone).\n\n"
                   f"Frontier (dipeptide JSD vs passes): {frontier_text(rows, key='jsd_dipeptide', higher=False)}\n",
                   markdown)


def _n_text(rows: list[dict]) -> str:
    return ", ".join(sorted({str(r["n"]) for r in rows}))


def _commands(rows: list[dict], cmd: str) -> str:
    """Each distinct command that made the rows (``cmd`` for rows without one), a code line each."""
    return "".join(f"`{c}`\n\n" for c in dict.fromkeys(r.get("command", cmd) for r in rows))
