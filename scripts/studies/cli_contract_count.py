"""Count how a checkout of MI Lens answers the bad command lines of ``tests/cli_cases.py``.

``python scripts/studies/cli_contract_count.py --repo PATH [--json OUT]`` runs every case as ``python -m mi_core ...``
in a subprocess with ``PATH`` as working folder and import path (so an older commit, checked out with
``git worktree add``, can be measured with today's table), each under a time limit and an address-space
limit (so a case that tries to allocate a terabyte fails fast instead of swapping the machine), and sorts
the outcomes:

- ``clean``: exit 2, exactly one ``error:`` line, no traceback (for ``train --help``: exit 0);
- ``traceback``: a Python traceback (any exit status);
- ``accepted``: exit 0 although the input is bad (the command ran);
- ``hang``: still running at the time limit;
- ``unclear``: anything else (exit 2 with several error lines, another exit status, ...).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(HERE / "tests"))

from cli_cases import cases, fill, make_inputs


def limit_memory(gib: float):
    def apply():
        size = int(gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (size, size))

    return apply


def classify(group: str, rc: int | None, out: str, err: str) -> str:
    if rc is None:
        return "hang"
    if "Traceback" in out + err:
        return "traceback"
    if group == "help":
        return "clean" if rc == 0 else "unclear"
    if rc == 0:
        return "accepted"
    lines = [ln for ln in (out + err).splitlines() if "error:" in ln]
    return "clean" if rc == 2 and len(lines) == 1 else "unclear"


def run_case(repo: Path, argv: list[str], timeout: float, gib: float) -> tuple[int | None, str, str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo)}
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, "-m", "mi_core", *argv], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=timeout, preexec_fn=limit_memory(gib), check=False)
        return proc.returncode, proc.stdout, proc.stderr, time.time() - start
    except subprocess.TimeoutExpired as err:
        def text(b):
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")

        return None, text(err.stdout), text(err.stderr), time.time() - start


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repo", type=Path, default=HERE, help="the checkout to measure (default: this one)")
    p.add_argument("--timeout", type=float, default=45.0, help="seconds per case before it counts as a hang")
    p.add_argument("--memory-gib", type=float, default=8.0, help="address-space limit per case")
    p.add_argument("--json", type=Path, default=None, help="write every case's outcome here")
    p.add_argument("--only", default=None, help="comma-separated case ids")
    args = p.parse_args(argv)
    repo = args.repo.resolve()
    table = cases()
    if args.only:
        keep = set(args.only.split(","))
        table = [c for c in table if c[0] in keep]
    rows = []
    with tempfile.TemporaryDirectory(prefix="cli_contract_") as tmp:
        places = make_inputs(Path(tmp), repo)
        for name, group, case_argv in table:
            rc, out, err, seconds = run_case(repo, fill(case_argv, places), args.timeout, args.memory_gib)
            outcome = classify(group, rc, out, err)
            last = [ln for ln in (out + err).strip().splitlines() if ln.strip()][-1:] or [""]
            rows.append({"case": name, "group": group, "outcome": outcome, "exit": rc, "seconds": round(seconds, 1),
                         "last_line": last[0][:300]})
            print(f"{outcome:9s} {name:40s} exit={rc} {seconds:5.1f}s  {last[0][:110]}", flush=True)
    counts = Counter(r["outcome"] for r in rows)
    by_group = {g: dict(Counter(r["outcome"] for r in rows if r["group"] == g)) for g in dict.fromkeys(r["group"] for r in rows)}
    summary = {"repo": str(repo), "cases": len(rows), **{k: counts.get(k, 0) for k in
               ("clean", "traceback", "accepted", "hang", "unclear")}, "by_group": by_group}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"summary": summary, "cases": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
