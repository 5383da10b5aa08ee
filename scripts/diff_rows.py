"""Compare two benchmark result files row by row: ``python scripts/diff_rows.py OLD.json NEW.json``.

Rows (a JSON list, ``{"rows": [...]}``, or one row: a ``bench`` run's file, bare or as ``{"run": {...}}`` beside
notes) are matched by set, sampler, params and the run settings that tell a file's rows of one sampler apart
(:data:`RUN_FIELDS`: a bench-order row's ``T``, ``seed`` and ``matched``, a sweep row's ``iterations``, ``views`` and
``attempts``); a file with two rows of one key is refused. Fields that record how a run was made rather than what it
measured (``seconds``, ``command``, ``model``, ``seeding``) are skipped by default (``--skip``). Prints one line per
row that differs and a summary; exits 1 when a measured field differs or a row is missing on either side, else 0.
``--rerun-only`` checks a partial rerun (some samplers of a sweep, one budget of a bench-order file): OLD's rows that
NEW does not hold are left out, not missing. Used to check that a refactor reproduces the committed figures
(BENCHMARKS.md, "Reproduced after the domain-seam redesign").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file, from anywhere
from mi_core.bench.sweep import row_params  # noqa: E402

SKIP = "seconds,command,model,seeding"
# run settings in a row's key, with the value a row that lacks one ran with (rows record attempts only when > 1)
RUN_FIELDS = {"T": None, "seed": 0, "matched": False, "iterations": None, "views": 1, "attempts": 1}


def rows_of(path: Path) -> list[dict]:
    """``path``'s rows: a JSON list, ``{"rows": [...]}``, or one row (a ``bench`` run's file, or its ``run``)."""
    data = json.loads(path.read_text())
    if isinstance(data, dict) and isinstance(data.get("run"), dict) and "sampler" not in data:
        data = data["run"]  # a bench run kept with notes beside it (sudoku_learned15_kaggle200_soup3.json)
    rows = data.get("rows", [data] if "sampler" in data else None) if isinstance(data, dict) else data
    if not isinstance(rows, list) or not all(isinstance(r, dict) and "sampler" in r for r in rows):
        raise SystemExit(f"error: {path} holds no list of rows with a sampler each")
    return rows


def typed(row: dict) -> dict:
    """``row`` with its params typed, so a row written with strings (``"k": "4"``) matches its rerun."""
    return {**row, "params": row_params({"params": {}, **row})}


def key(row: dict) -> tuple:
    return (row.get("set"), row["sampler"], json.dumps(row["params"], sort_keys=True),
            *(row.get(f, default) for f, default in RUN_FIELDS.items()))


def label(k: tuple) -> str:
    """A key as set, sampler and params, then the run settings that are not their default."""
    extra = [f"{f}={v}" for (f, default), v in zip(RUN_FIELDS.items(), k[3:]) if v != default]
    return str((*k[:3], *extra))


def keyed(path: Path) -> dict:
    """``path``'s rows by :func:`key`; a key twice is an error (its rows could not be told apart)."""
    rows = {}
    for row in map(typed, rows_of(path)):
        if key(row) in rows:
            raise SystemExit(f"error: {path} holds two rows of {label(key(row))}: they cannot be told apart")
        rows[key(row)] = row
    return rows


def compare(a: dict, b: dict, prefix: str = "") -> tuple[dict, list[str]]:
    """``({field: (old, new)}, [fields only in b])`` of two rows' fields; a nested dict (``by_level``) is compared
    field by field, so a field a rerun adds inside it (``mean_extra_passes``) is new, not a changed figure, while
    one it lost is a difference. Nested fields are named with dots (``by_level.Hard.accuracy``)."""
    diff, added = {}, []
    for f in sorted(set(a) | set(b), key=str):
        name = f"{prefix}{f}"
        if f not in a:
            added.append(name)
        elif f not in b:
            diff[name] = (a[f], None)
        elif isinstance(a[f], dict) and isinstance(b[f], dict):
            inner, more = compare(a[f], b[f], f"{name}.")
            diff, added = diff | inner, added + more
        elif a[f] != b[f]:
            diff[name] = (a[f], b[f])
    return diff, added


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("old", type=Path)
    p.add_argument("new", type=Path)
    p.add_argument("--skip", default=SKIP, help=f"comma-separated fields not compared (default {SKIP})")
    p.add_argument("--rerun-only", action="store_true",
                   help="compare only OLD's rows that NEW holds (a rerun of some of them); the rest are left out")
    args = p.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    old, new = keyed(args.old), keyed(args.new)
    if args.rerun_only:
        left = len(old) - len(old.keys() & new.keys())
        old = {k: row for k, row in old.items() if k in new}
        print(f"{left} old rows not rerun, left out", file=sys.stderr)
    bad = 0
    for k in sorted(set(old) | set(new), key=str):
        if k not in new or k not in old:
            print(f"{label(k)}: only in {'old' if k in old else 'new'}")
            bad += 1
            continue
        a, b = old[k], new[k]
        diff, added = compare({f: a[f] for f in set(a) & set(b) - skip}, {f: b[f] for f in set(b) - skip})
        if diff:
            bad += 1
            print(f"{label(k)}: differs in {diff}")
        elif added:
            print(f"{label(k)}: same figures; new fields {added}")
    print(f"{len(old)} old rows, {len(new)} new rows, {bad} differ or are missing", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
