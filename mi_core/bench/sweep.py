"""``python -m mi_core sweep sudoku --puzzles PATH [--limit N] --json OUT``: a grid of samplers on one puzzle set.

Writes a JSON list of rows (``sampler``, ``params``, ``n``, ``accuracy``, ``cell_accuracy``, ``mean_passes``,
``seconds``, ``set`` and the settings: ``seed``, ``batch_size``, ``limit``, ``level``, ``precision``) and
nothing else unless asked: ``--html PATH`` writes the accuracy-versus-mean-passes frontier as one
self-contained plotly HTML file, ``--markdown FILE`` a Markdown table into a section of FILE named after
the puzzle set. An existing ``--json`` or ``--html`` is only replaced with ``--force`` (``--merge`` adds to
the rows of an existing ``--json`` and replaces ``--html``).

``python -m mi_core sweep protein --reference FASTA --samples N --lengths 50-100 --json OUT --name NAME``: the
same for protein generation (see :func:`protein_main`): rows with ``sampler``, ``params``, ``n``,
``mean_passes``, ``jsd_aa``, ``jsd_dipeptide``, ``diversity``; the frontier is JSD against mean passes.
"""

from __future__ import annotations

import itertools
import json
import shlex
import sys
from pathlib import Path

from tqdm import tqdm

from mi_core.bench import protein as protein_bench
from mi_core.bench.report import frontier, markdown_table, update_section, write_json
from mi_core.bench.scale import protein_cells, sudoku_cells
from mi_core.bench.sudoku import evaluate, warm_up, with_default_estimator
from mi_core.decoding import STRATEGIES, make_strategy
from mi_core.device import pick_device
from mi_core.domains.sudoku import read_puzzles
from mi_core.io import check_output, display_path
from mi_core.models.sudoku_mdm import load_sudoku_mdm
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
    if not args.merge:
        check_output(args.json, args.force, "--json")
    else:
        check_output(args.json, True, "--json")
    check_output(args.html, args.force or args.merge, "--html")  # --merge updates the plot of the rows too
    if args.markdown is not None and str(args.markdown) != "-":
        check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    return old


def write_html(make_figure, path: Path | None, plotlyjs: str = "inline") -> None:
    """The plot ``make_figure()`` as HTML at ``path``: plotly.js inlined (one self-contained file, works
    offline), or with ``plotlyjs="beside"`` a ``plotly.min.js`` written next to it (several plots share one
    copy). Without plotly installed (e.g. a bare GPU machine) say so on stderr and write nothing."""
    if path is None:
        return
    try:
        import plotly  # noqa: F401
    except ModuleNotFoundError:
        print(f"note: plotly is not installed, so no frontier HTML was written ({path})", file=sys.stderr)
        return
    from mi_core.io import atomic_write_text

    fig = make_figure()

    if plotlyjs == "beside":
        fig.write_html(path, include_plotlyjs="directory")
    else:
        atomic_write_text(path, fig.to_html(include_plotlyjs=True, full_html=True))


def add_output_options(p) -> None:
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--merge", action="store_true",
                   help="add to the rows already in --json (a rerun of a sampler and params replaces its row)")
    p.add_argument("--html", type=Path, default=None, help="also write the frontier plot here (self-contained)")
    p.add_argument("--plotlyjs", choices=["inline", "beside"], default="inline",
                   help="with --html: inline plotly.js, or write plotly.min.js beside the HTML (shared by several)")
    p.add_argument("--markdown", type=Path, default=None,
                   help="also write a table into this report file's section for the set (e.g. BENCHMARKS.md)")
    add_force(p)


def frontier_figure(rows: list[dict], title: str):
    """Plotly figure: accuracy against mean passes, one trace per sampler."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name in dict.fromkeys(r["sampler"] for r in rows):
        pts = sorted((r for r in rows if r["sampler"] == name), key=lambda r: r["mean_passes"])
        fig.add_trace(go.Scatter(
            x=[r["mean_passes"] for r in pts], y=[100 * r["accuracy"] for r in pts], mode="lines+markers", name=name,
            text=[", ".join(f"{k}={v}" for k, v in r["params"].items()) for r in pts],
            hovertemplate="%{text}<br>passes %{x:.1f}<br>accuracy %{y:.1f}%<extra>" + name + "</extra>"))
    fig.update_layout(title=title, xaxis_title="mean forward passes per puzzle", yaxis_title="puzzles solved (%)",
                      xaxis_type="log", template="plotly_white")
    return fig


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["protein"]:
        return protein_main(argv[1:])
    p = ArgumentParser(prog="python -m mi_core sweep", description=__doc__)
    p.add_argument("domain", choices=["sudoku", "protein"], help="'sweep protein -h' for the protein options")
    p.add_argument("--puzzles", required=True, type=Path)
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--level", default=None, help="only puzzles of this level (CSV files with a level column)")
    p.add_argument("--name", default=None, help="name of the puzzle set in the report (default: file stem + level)")
    p.add_argument("--grid", action="append", default=None, metavar="SPEC",
                   help='e.g. "topk:k=2,4,7" or "mi:gamma=0.1,0.3;lam=1,2" (repeatable; replaces the default grid)')
    p.add_argument("--samplers", default=None, help="comma-separated: keep only these samplers of the grid")
    add_output_options(p)
    p.add_argument("--model", type=Path, default=Path("assets/sudoku_mdm.safetensors"))
    p.add_argument("--device", default="auto")
    p.add_argument("--bf16", action="store_true", help="bf16 autocast for the model passes (faster on CPUs with AMX)")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--seed", type=int, default=0)
    add_engine_options(p)
    args = p.parse_args(argv)
    old_rows = check_outputs(args)
    engine = engine_from_args(args)  # Ray missing or a bad setting: one line before any work

    configs = [c for spec in (args.grid or DEFAULT_GRID) for c in parse_grid_spec(spec)]
    if args.samplers:
        keep = {s.strip() for s in args.samplers.split(",")}
        configs = [c for c in configs if c[0] in keep]
    if not configs:
        raise ValueError("the grid is empty after --samplers filtering")
    records = read_puzzles(args.puzzles)
    if args.level:
        records = [r for r in records if (r.level or "").lower() == args.level.lower()]
        if not records:
            raise ValueError(f"no puzzles of level {args.level!r} in {args.puzzles}")
    records = records[: args.limit] if args.limit is not None else records
    set_name = args.name or (args.puzzles.stem + (f"_{args.level}" if args.level else ""))
    strategies = [with_default_estimator(make_strategy(name, **params)) for name, params in configs]  # fail fast on bad params
    device = pick_device(args.device)
    model = load_sudoku_mdm(args.model, device)
    cmd = "python -m mi_core sweep " + " ".join(argv if argv is not None else sys.argv[1:])
    rows = []
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
                     "batch_size": args.batch_size, "temperature": 0.0, "model": display_path(args.model), "command": cmd})
        print(f"{set_name} {name} {params}: accuracy {res['accuracy']:.3f}, mean passes {res['mean_passes']:.1f}",
              file=sys.stderr)
    if args.merge:
        rows = merge_rows(old_rows, rows)
    write_json(rows, args.json)
    if args.html is not None:
        write_html(lambda: frontier_figure(rows, f"Accuracy vs passes: {set_name} (n={len(records)})"), args.html,
                   args.plotlyjs)
    if args.markdown is not None and str(args.markdown) != "-":
        table = markdown_table(rows, [("sampler", "sampler"), ("params", "params"), ("n", "n"),
                                      ("accuracy", "accuracy"), ("cell_accuracy", "cell acc."),
                                      ("mean_passes", "mean passes"), ("seconds", "seconds")])
        n_text = ", ".join(sorted({str(r["n"]) for r in rows}))
        front = ", ".join(f"{r['sampler']}({', '.join(f'{k}={v}' for k, v in r['params'].items())})" for r in frontier(rows))
        update_section(f"sweep-{set_name}", f"### Sweep: {set_name} (n={n_text}, device {device.type}, {'bf16' if args.bf16 else 'fp32'} forward passes; seconds after an untimed warm-up decode, each batch read back before the clock stops)\n\n"
                       + "".join(f"`{c}`\n\n" for c in dict.fromkeys(r.get("command", cmd) for r in rows)) + f"{table}\n\nFrontier (accuracy vs passes): {front}\n", args.markdown)
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


def protein_frontier_figure(rows: list[dict], title: str):
    """Plotly figure: dipeptide JSD (left) and amino-acid JSD (right) against mean passes, a trace per sampler."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("dipeptide composition", "amino-acid composition"))
    colors = qualitative.Plotly
    for n, name in enumerate(dict.fromkeys(r["sampler"] for r in rows)):
        pts = sorted((r for r in rows if r["sampler"] == name), key=lambda r: r["mean_passes"])
        text = [", ".join(f"{k}={v}" for k, v in r["params"].items()) for r in pts]
        for col, key in ((1, "jsd_dipeptide"), (2, "jsd_aa")):
            fig.add_trace(go.Scatter(
                x=[r["mean_passes"] for r in pts], y=[r[key] for r in pts], mode="lines+markers", name=name,
                legendgroup=name, showlegend=col == 1, text=text, line_color=colors[n % len(colors)],
                hovertemplate="%{text}<br>passes %{x:.1f}<br>JSD %{y:.4f} bits<extra>" + name + "</extra>"), row=1, col=col)
    fig.update_xaxes(title_text="mean forward passes per sequence", type="log")
    fig.update_yaxes(title_text="JSD from the reference (bits)")
    fig.update_layout(title=title, template="plotly_white")
    return fig


def protein_frontier(rows: list[dict], key: str = "jsd_dipeptide") -> list[dict]:
    """Rows no other row beats on both counts (fewer or equal mean passes, lower ``key``), by passes."""
    best, out = float("inf"), []
    for row in sorted(rows, key=lambda r: (r["mean_passes"], r[key])):
        if row[key] < best:
            out.append(row)
            best = row[key]
    return out


def protein_configs(grid: list[str], samplers: str | None, estimator: Path | None) -> list[tuple[str, dict, object]]:
    """``(name, params, strategy)`` of each grid point; ``mi`` points without an MI source read ``estimator``
    (see ``mi_core.bench.protein.estimator_for``), or are skipped with a note on stderr when there is none."""
    configs = [c for spec in grid for c in parse_grid_spec(spec)]
    if samplers:
        keep = {s.strip() for s in samplers.split(",")}
        configs = [c for c in configs if c[0] in keep]
    out = []
    for name, params in configs:
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


def protein_main(argv: list[str]) -> int:
    p = ArgumentParser(prog="python -m mi_core sweep protein",
                                description="A grid of samplers generating protein sequences, measured against a reference set.")
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
    args = p.parse_args(argv)
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
    cmd = "python -m mi_core sweep protein " + shlex.join(argv)  # quoted: grid specs hold ';'
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
    if args.html is not None:
        write_html(lambda: protein_frontier_figure(rows, f"JSD vs passes: {set_name} (n={len(lengths)}, "
                                                         f"lengths {args.lengths})"), args.html, args.plotlyjs)
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
    front = ", ".join(f"{r['sampler']}({', '.join(f'{k}={v}' for k, v in r['params'].items())})" for r in protein_frontier(rows))
    n_text = ", ".join(sorted({str(r["n"]) for r in rows}))
    temps = ", ".join(sorted({str(r.get("temperature")) for r in rows}))
    update_section(f"sweep-protein-{set_name}",
                   f"### Protein sweep: {set_name} (n={n_text}, temperature {temps}, device {device.type}, {precision} forward passes)\n\n"
                   + "".join(f"`{c}`\n\n" for c in dict.fromkeys(r.get("command", cmd) for r in rows))
                   + f"{table}\n\nIdentity: mean pairwise position-wise identity (unaligned, over the shorter length); "
                   "lower is more diverse; ref. identity is the reference set's own. Floor: the JSD of reference "
                   "sequences cut to the generated lengths (sampling noise alone).\n\n"
                   f"Frontier (dipeptide JSD vs passes): {front}\n", markdown)
