"""``python -m mi_lens_app.sweep_plot ROWS.json OUT.html [--plotlyjs inline|beside] [--title T]``: the
frontier plot of a sweep's rows (quality against mean passes, each sampler's settings as points and the
Pareto front as the line), the same figure as the app's Benchmarks page.

Plotting lives in the app, not in ``mi_core``: ``python -m mi_core sweep`` writes the rows, this draws them.
The HTML is self-contained (plotly.js inlined, works offline), or with ``--plotlyjs beside`` a shared
``plotly.min.js`` is written next to it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from mi_core.bench.report import not_json
from mi_core.cli import ArgumentParser, path_arg
from mi_core.io import atomic_write_text, check_output, missing_file
from mi_lens_app.benchmarks import _rows_of


def write_plot(rows_path: Path, out: Path, plotlyjs: str = "inline", title: str | None = None) -> None:
    """Raises ValueError when ``rows_path`` is not a sweep's JSON."""
    from mi_lens_app.charts import frontier_figure

    if not rows_path.is_file() and not rows_path.is_dir():  # a named pipe would block the read for good
        raise ValueError(missing_file(rows_path, "sweep rows not found"))
    try:
        rows = _rows_of(json.loads(rows_path.read_text()), rows_path)
    except (OSError, ValueError) as err:
        raise ValueError(not_json(rows_path, err, "a sweep's --json file, a JSON list of rows")
                         or f"cannot read sweep rows from {rows_path}: {err}") from None
    if rows is None:
        raise ValueError(f"{rows_path} holds no sweep rows (a JSON list of rows with sampler, params, n, mean_passes)")
    sets = ", ".join(dict.fromkeys(r["set"] for r in rows))
    n = ", ".join(sorted({str(r["n"]) for r in rows}))
    fig = frontier_figure(rows, title or f"{sets} (n={n})")
    if plotlyjs == "beside":  # plotly.min.js as write_html copies it (an existing one is kept), both written whole
        js = out.parent / "plotly.min.js"
        if not js.exists():
            from plotly.offline import get_plotlyjs

            atomic_write_text(js, get_plotlyjs())
    atomic_write_text(out, fig.to_html(include_plotlyjs=True if plotlyjs == "inline" else "directory", full_html=True))


def reads_rows(rows: Path, out: Path) -> bool:
    """``out`` names the file ``rows`` (also as ``sub/../rows.json`` with no ``sub``, or a link to it)."""
    if out.resolve() == rows.resolve():
        return True
    return rows.is_file() and out.is_file() and out.samefile(rows)  # a hard link


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m mi_lens_app.sweep_plot", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("rows", type=path_arg, help="a sweep's --json file")
    p.add_argument("out", type=path_arg, help="the HTML file to write")
    p.add_argument("--plotlyjs", choices=["inline", "beside"], default="inline",
                   help="inline plotly.js, or write plotly.min.js beside the HTML (shared by several)")
    p.add_argument("--title", default=None)
    p.add_argument("--force", action="store_true", help="overwrite an existing OUT")
    try:
        args = p.parse_args(argv)
        if reads_rows(args.rows, args.out):  # even with --force; before "pass --force", which this refuses too
            raise ValueError(f"out {args.out} is the rows file this command reads: write the plot elsewhere")
        if args.out.suffix.lower() not in (".html", ".htm"):  # the plot is a page: out.png held HTML
            raise ValueError(f"out {args.out}: the plot is an HTML page; give a file name ending in .html")
        check_output(args.out, args.force, "out")
        write_plot(args.rows, args.out, args.plotlyjs, args.title)
        print(f"wrote {args.out}" + (" (and plotly.min.js beside it)" if args.plotlyjs == "beside" else ""))
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 2
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
