"""``python -m mi_core sweep DOMAIN --json OUT [inputs] [--grid SPEC ...]``: a grid of samplers on one input set.

The inputs are the domain's benchmark inputs, as for ``bench``. Writes a JSON list of rows (``set``,
``sampler``, ``params``, the domain's metric, ``seconds`` and the settings); ``--markdown FILE`` also writes
a table into a section of FILE named after the set. An existing ``--json`` is only replaced with ``--force``
(``--merge`` adds to its rows). ``python -m mi_lens_app.sweep_plot ROWS.json OUT.html`` draws the frontier.
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tqdm import tqdm

from mi_core.bench import decode
from mi_core.bench.metrics import PASS_KEYS
from mi_core.bench.report import (
    Kept,
    check_partial,
    command_line,
    frontier_text,
    markdown_table,
    not_json,
    params_text,
    ran_on,
    row_domain,
    update_section,
)
from mi_core.bench.scale import run_cells, runner, sweep_cell
from mi_core.decoding import STRATEGIES, make_strategy
from mi_core.decoding.base import check_one_of, typed_params
from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domain import get_domain
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.estimator import absent_own_estimator
from mi_core.options import Device, Force, markdown_option, naming, option, section_problem
from mi_core.scale.engine import EngineConfig, absolute, engine_from_args

# a figure's column heading, where not its key with spaces
HEADINGS = {"cell_accuracy": "cell acc.", "mean_attempts": "mean decodes"}

DEFAULT_GRID = [  # the grid of inputs that name none (``sweep_grid``)
    "sequential", "topk:k=2,4,7", "top_margin:k=2,4,7", "eb:gamma=0.1,0.2,0.5,1",
                "threshold:tau=0.7,0.9,0.99", "mask_predict:steps=10,20", "mi:gamma=0.1,0.3,0.6,1;lam=0.5,1,2"]


def parse_grid_spec(spec: str, what: str = "grid") -> list[tuple[str, dict[str, str]]]:
    """``"mi:gamma=0.1,0.3;lam=1,2"`` -> every (name, params) combination; ValueError on a bad spec, naming it as
    ``what`` (a ``grid``, or the option that gave one setting)."""
    name, _, rest = spec.partition(":")
    name = name.strip()
    if name not in STRATEGIES:
        raise ValueError(f"unknown sampler {name!r} in {what} {spec!r}; choose one of {', '.join(sorted(STRATEGIES))}")
    axes = []
    for part in filter(None, (p.strip() for p in rest.split(";"))):
        key, sep, values = part.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not key.strip() or not vals:
            raise ValueError(f"{what} {spec!r}: expected key=v1,v2,... but got {part!r}")
        if any(axis[0][0] == key.strip() for axis in axes):  # the last would win without a word
            raise ValueError(f"{what} {spec!r} gives {key.strip()} twice: give it once" + (
                f" (a sweep grid lists its values there, {key.strip()}=v1,v2)" if what == "grid" else ""))
        axes.append([(key.strip(), v) for v in vals])
    return [(name, check_one_of(name, dict(combo))) for combo in itertools.product(*axes)]


def point_config(name: str, params: dict, domain) -> tuple[str, dict, bool]:
    """``(name, params, reads_mi)``: ``params`` with the domain's order selector added for a strategy that runs one
    and names none (:func:`~mi_core.bench.decode.with_selector`), as an absolute path, so every cell finds it;
    ``reads_mi``: the strategy reads MI and names no source (:func:`~mi_core.bench.decode.lacks_mi_source`)."""
    strategy = decode.with_selector(make_strategy(name, **params), domain)
    path = getattr(strategy, "selector", None)
    if path is not None and "selector" not in params:
        params = {**params, "selector": path}
    return name, params, decode.lacks_mi_source(strategy)


COUNTS = ("steps", "k")  # parameters that count passes, or positions a pass


def fitting_points(configs: list[tuple[str, dict, bool]], positions: int | None) -> list[tuple[str, dict, bool]]:
    """The points of a default grid whose ``steps`` and ``k`` are below ``positions``, those of the longest input
    (``steps`` at or above them: more passes than positions; ``k``: every input filled in one pass); a note names
    the points left out, a ValueError where that leaves none (before the model loads)."""
    def fits(name: str, params: dict) -> bool:
        typed = typed_params(name, params)
        return positions is None or all((typed.get(key) or 0) < positions for key in COUNTS)

    left = [f"{name} {params_text(typed_params(name, params))}" for name, params, _ in configs if not fits(name, params)]
    if left:
        print(f"note: the default grid leaves out {', '.join(left)}: a count at or above the {positions} positions of "
              "the longest input (steps: more passes than positions; k: all in one pass); --grid runs it",
              file=sys.stderr)
    kept = [c for c in configs if fits(c[0], c[1])]
    if configs and not kept:
        raise ValueError(f"every point of the default grid left has a count at or above the {positions} positions of "
                         "the longest input: give the points to run with --grid, or other --samplers")
    return kept


def recorded_params(name: str, params: dict) -> dict:
    """``params`` of sampler ``name`` as a row records them: typed (``{"k": 4}``, not ``"4"``), a selector's path
    relative to the repository."""
    return {k: display_path(v) if k == "selector" else v for k, v in typed_params(name, params).items()}


def spec_points(spec: str) -> list[tuple[str, dict[str, str]]]:
    """The points of ``--grid`` ``spec`` (:func:`parse_grid_spec`), each one's strategy built: a bad value is named
    as the ``--grid`` spec, and the point of it, that gave it."""
    points = parse_grid_spec(spec)
    for name, params in points:
        point = f" (its point {name} {params_text(params)})" if len(points) > 1 else ""
        with naming({}, fallback=f"--grid {spec}{point}"):
            make_strategy(name, **params)
    return points


def grid_configs(grid: list[str], samplers: str | None) -> list[tuple[str, dict[str, str]]]:
    configs = [c for spec in grid for c in spec_points(spec)]
    typed = [(name, typed_params(name, params)) for name, params in configs]
    twice = next((t for n, t in enumerate(typed) if t in typed[:n]), None)
    if twice:  # it ran twice and wrote two rows alike
        raise ValueError(f"the grid gives {twice[0]} {params_text(twice[1])} more than once: give each setting once")
    if samplers is None:
        return configs
    keep = {s.strip() for s in samplers.split(",")} - {""}
    in_grid = {name for name, _ in configs}
    if not keep or keep - in_grid:  # a misspelt name filtered the whole grid away, after the model loaded
        unknown = ", ".join(sorted(keep - in_grid)) or repr(samplers)
        raise ValueError(f"--samplers {unknown}: not in the grid, whose samplers are {', '.join(sorted(in_grid))}")
    return [c for c in configs if c[0] in keep]


def same_model(recorded: str, name: str) -> bool:
    """A row's ``model`` names the model ``name``: alike, or the same file spelled another way (a file outside the
    repository is recorded as given: ``m.safetensors`` in one run, ``/work/m.safetensors`` in the next)."""
    return recorded == name or Path(recorded).resolve() == Path(name).resolve()


def merge_rows(old: list[dict], new: list[dict]) -> list[dict]:
    """``old`` rows, those with the same set, sampler, params, iterations, views and attempts replaced, then the
    rest of ``new``."""

    def key(r):
        return (r.get("set"), r["sampler"], json.dumps(row_params(r), sort_keys=True), r.get("iterations"),
                r.get("views"), r.get("attempts"))

    fresh = {key(r): r for r in new}
    kept = [fresh.pop(key(r), {**r, "params": row_params(r)}) for r in old]
    return kept + list(fresh.values())


def row_params(row: dict) -> dict:
    """A row's params typed: rows written before sweeps typed them hold strings, and ``"k": "4"`` is ``"k": 4``."""
    try:
        return typed_params(row["sampler"], row["params"])
    except (ValueError, TypeError, AttributeError):  # a sampler or parameter this version lacks, or no params
        return row["params"]


def read_rows(path: Path) -> list[dict]:
    """The rows already in a sweep JSON (for ``--merge``); [] when the file does not exist."""
    if not path.exists():
        return []
    if not path.is_file():
        raise ValueError(f"--merge: {path} is not a file")
    try:
        rows = json.loads(path.read_text())
    except ValueError as err:  # UnicodeDecodeError is one
        raise ValueError("--merge: " + (not_json(path, err, "a sweep's --json file, a JSON list of rows")
                                        or f"{path} is not valid JSON ({err})")) from None
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "sampler" in r and isinstance(r.get("params"), dict) for r in rows):
        raise ValueError(f"--merge: {path} must hold a JSON list of sweep rows (objects with sampler and params), "
                         f"found {type(rows).__name__}")
    return rows


def check_same_domain(rows: list[dict], name: str, path: Path) -> None:
    """Refuse ``--merge`` into ``path`` when its ``rows`` were run on a domain other than ``name``, or do not say
    which (rows written before sweeps recorded their command): a file of two domains' rows mixes their measures (a
    protein's JSD, an antibody's recovery), and the plot refuses it."""
    domain = get_domain(name)
    others = [r for r in rows if ran_on(r, domain) is False]
    if others:
        found = dict.fromkeys(map(row_domain, others))
        sets = ", ".join(dict.fromkeys(repr(r.get("set")) for r in others))
        raise ValueError(f"--merge: {path} holds {' and '.join(found)} sweep rows (set {sets}), not {domain.cli_name}: "
                         "a file of two domains cannot be plotted; write this sweep to another --json")
    unnamed = [i for i, r in enumerate(rows) if row_domain(r) is None]
    if unnamed:
        row, more = rows[unnamed[0]], f" and {len(unnamed) - 1} more" if len(unnamed) > 1 else ""
        raise ValueError(f"--merge: {path} row {unnamed[0] + 1} (set {row.get('set')!r}, sampler {row['sampler']!r})"
                         f"{more} records neither its domain nor the sweep command that wrote it: where they were run "
                         f'on {domain.cli_name}, add "domain": "{domain.cli_name}" to them; else write this sweep to '
                         "another --json")


def check_outputs(args) -> list[dict]:
    """Refuse unwritable outputs before any work; the rows to merge with (``--merge``), else []."""
    check_partial(args, "sweep", "cells", replace=args.merge)  # --merge rewrites the file it reads
    old = read_rows(args.json) if args.merge else []
    check_same_domain(old, args.domain, args.json)  # before the model loads: the merged file could not be plotted
    if args.markdown is not None and str(args.markdown) != "-":
        check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    return old


@dataclass
class SweepOutput:
    json: Path = option(None, "write the rows here", required=True)
    merge: bool = option(False, "add to the rows already in --json (a rerun of a sampler and params replaces its row)")
    resume: bool = option(False, "continue an interrupted sweep of the same settings: the cells it finished (kept in "
                          "--json's .partial file as each finishes) are not run again")
    markdown: Path | None = markdown_option("also write a table into this report file's section for the set "
                                            "(e.g. BENCHMARKS.md)")


@dataclass
class SweepGrid:
    grid: list[str] | None = option(None, 'e.g. "topk:k=2,4,7" or "mi:gamma=0.1,0.3;lam=1,2" (repeatable; replaces '
                                    "the default grid)", many=True, metavar="SPEC")
    samplers: str | None = option(None, "comma-separated: keep only these samplers of the grid")
    estimator: Path | None = option(None, "MI estimator of the mi rows (default: the one trained on the model's own "
                                    "weights: the domain's, else one under assets/)")


def grid_points(configs: list[tuple[str, dict, bool]], estimator: str | None,
                absent: str = "") -> list[tuple[str, dict, str | None]]:
    """``(name, params, estimator)`` of each grid point ``(name, params, reads_mi)``; one that reads MI with no
    source of its own reads ``estimator``, or is skipped when there is none (its note adds ``absent``: why the
    domain's own estimator is missing)."""
    kept = []
    for name, params, reads_mi in configs:
        if reads_mi and estimator is None:
            print(f"note: skipping {name} {params}: no MI estimator for this model (--estimator PATH)"
                  + (f"; {absent}" if absent else ""), file=sys.stderr)
            continue
        kept.append((name, params, absolute(estimator) if reads_mi else None))
    if not kept:
        raise ValueError("the grid is empty after --samplers filtering and skipped mi rows")
    return kept


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = decode.NO_METRIC


def serves(domain) -> bool:
    return domain.metric is not None


def describe(domain) -> str:
    return f"{domain.label}: a grid of samplers, each run as bench does. {decode.inputs_class(domain).description}"


def options(domain) -> list:
    inputs = decode.inputs_class(domain)
    return [*inputs.options(domain, sweep=True), SweepGrid, SweepOutput, Force, Device, decode.run_options(inputs, domain),
            EngineConfig]


def main(args) -> int:
    old_rows = check_outputs(args)
    engine = engine_from_args(args)
    domain = get_domain(args.domain)
    inputs_cls = decode.inputs_class(domain)
    grid = args.grid or getattr(inputs_cls, "sweep_grid", DEFAULT_GRID)
    configs = [point_config(n, p, domain) for n, p in grid_configs(grid, args.samplers)]  # bad params fail now
    inputs = inputs_cls(domain, args)
    if not args.grid:  # a grid given is run as given
        configs = fitting_points(configs, max(map(len, inputs.templates), default=None))
    if args.markdown is not None and str(args.markdown) != "-" and (problem := section_problem(f"sweep-{inputs.name}")):
        raise ValueError(f"--name {inputs.name!r}: {problem}")  # before the work, not after it (the JSON written)
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model, _, model_name = decode.load(args, domain, device, inputs)
    other = sorted({r["model"] for r in old_rows if r.get("set") == inputs.name and r.get("model") is not None
                    and not same_model(r["model"], model_name)})
    if other:  # merged, the set's rows would mix two models, and this one's replace the other's at the same settings
        raise ValueError(f"--merge: {args.json} holds rows of set {inputs.name!r} run on {other[0]}, not {model_name}: "
                         "give this run's set another --name")
    points = grid_points(configs, decode.default_estimator(model, domain, args.estimator), absent_own_estimator(domain))
    for path in {e for _, _, e in points if e is not None}:  # a bad file fails now, not after hours of cells
        decode.check_estimator(model, path, model_name, domain)
    precision = "bf16" if args.bf16 else "fp32"
    cmd = command_line(args, "sweep")
    run = decode.run_settings(args, inputs, domain, model)
    settings = {"set": inputs.name, **inputs.fields, "precision": precision, "seed": args.seed,
                "batch_size": args.batch_size, "temperature": args.temperature, "model": model_name,
                **decode.model_fields(model, args)}
    read = {path: decode.estimator_fields(path) for _, _, path in points}  # each file hashed once, not once a row
    keys = [cell_key(point, read[point[2]]) for point in points]
    cells = Kept(args, "sweep", settings, "cells", field="cells", prefix="", valid=is_row)

    def finish(index: int, res: dict) -> None:  # each cell's figures as it finishes, above the progress bar; kept
        name, params, estimator = points[index]
        tqdm.write(f"{inputs.name} {name} {params_text(recorded_params(name, params))}: " + ", ".join(
            f"{k} {res[k]:.4g}" for k in (*metric_figures([res]), "mean_passes") if k in res), file=sys.stderr)
        cells.keep({keys[index]: {"set": inputs.name, "sampler": name, "params": recorded_params(name, params), **res,
                                  **settings, **read[estimator], "command": cmd}})

    todo = [i for i, key in enumerate(keys) if key not in cells]
    if len(todo) < len(keys):
        print(f"{cells.path}: {len(keys) - len(todo)} of {len(keys)} cells already run", file=sys.stderr)
    run_cells([(sweep_cell, inputs.templates, inputs.metric, run, *points[i]) for i in todo], args, engine,
              None if engine.engine == "ray" else runner(model, device), done=lambda n, res: finish(todo[n], res))
    rows = [cells.done[key] for key in keys]
    results = [{k: r[k] for k in r if k not in settings} for r in rows]
    if args.merge:
        rows = merge_rows(old_rows, rows)
    atomic_write_json(args.json, rows)
    close(cells, keys)
    if args.markdown is not None:  # -: the section on standard output
        section = getattr(inputs_cls, "sweep_section", None) or partial(puzzle_section, figures=metric_figures(results))
        section(rows, inputs.name, device, precision, cmd, args.markdown)
    return 0


def cell_key(point: tuple[str, dict, str | None], estimator: dict | None = None) -> str:
    """A cell's key in the .partial file: its sampler, params and estimator file, with that file's sha256
    (``estimator``: :func:`decode.estimator_fields`), so an estimator trained again under its name runs again."""
    return json.dumps([*point, (estimator or {}).get("estimator_sha256")], sort_keys=True)


def close(cells: Kept, keys: list[str]) -> None:
    """The grid is done: remove the .partial file, or keep in it only the finished cells outside this grid (said). A
    cell of this grid run with an earlier estimator of the same file name (:func:`cell_key`) has been run again: its
    old figures are dropped, as no grid would use them."""
    ran = {json.dumps(json.loads(key)[:3], sort_keys=True) for key in keys}
    others = [key for key in cells.done if key not in keys and json.dumps(json.loads(key)[:3], sort_keys=True) not in ran]
    cells.close(others)
    if others:
        names = ", ".join(f"{r['sampler']} {params_text(r['params'])}".strip() for r in map(cells.done.get, others))
        print(f"note: {cells.path} keeps {len(others)} finished cells outside this grid ({names}): --resume "
              "with a grid that holds them uses them", file=sys.stderr)


def is_row(row) -> bool:
    """``row`` is a sweep row as :func:`main` keeps it: an object with its set, sampler, params and settings."""
    return isinstance(row, dict) and {"set", "sampler", "params", "command"} <= row.keys() and \
        isinstance(row["params"], dict)


def metric_figures(results: list[dict]) -> list[str]:
    """The figures the domain's metric reports in ``results``, in its order: the keys of float values (counts are
    ints, per-item and grouped results lists and dicts), less the pass counts (:data:`PASS_KEYS`) and ``seconds``."""
    return list(dict.fromkeys(k for r in results for k, v in r.items()
                              if isinstance(v, float) and k not in (*PASS_KEYS, "seconds")))


def puzzle_section(rows: list[dict], set_name: str, device, precision: str, cmd: str, markdown: Path,
                   figures: list[str] = ("accuracy", "cell_accuracy")) -> None:
    """The sweep's table: a column per figure of the metric (:func:`metric_figures`) between ``n`` and the passes."""
    views = [("views", "views (a pass costs this many)")] if any(r.get("views", 1) > 1 for r in rows) else []
    views += [("attempts", "decodes at most")] if any(r.get("attempts", 1) > 1 for r in rows) else []
    table = markdown_table(rows, [("sampler", "sampler"), ("params", "params"), *views, ("n", "n"),
                                  *((k, HEADINGS.get(k, k.replace("_", " "))) for k in figures),
                                  ("mean_passes", "mean passes"), ("seconds", "seconds")])
    frontier = f"\n\nFrontier (accuracy vs passes): {frontier_text(rows)}" if "accuracy" in figures else ""
    update_section(f"sweep-{set_name}", f"### Sweep: {set_name} (n={n_text(rows)}, device {device.type}, {precision} "
                   "forward passes; seconds after an untimed warm-up decode, each batch read back before the clock "
                   f"stops)\n\n{commands_text(rows, cmd)}{table}{frontier}\n", markdown)


def n_text(rows: list[dict]) -> str:
    return ", ".join(sorted({str(r["n"]) for r in rows}))


def commands_text(rows: list[dict], cmd: str) -> str:
    return "".join(f"`{c}`\n\n" for c in dict.fromkeys(r.get("command", cmd) for r in rows))
