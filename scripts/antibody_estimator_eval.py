"""``eval-estimator antibody`` with the uncertainty the BENCHMARKS figures need: a bootstrap over states.

``PYTHONPATH=. python scripts/antibody_estimator_eval.py [eval-estimator antibody options] [--boot 2000]
[--exact-cache FILE]``

Runs ``python -m mi_core eval-estimator antibody`` itself (same options, same JSON and markdown), keeps the
exact and estimated MI of every held-out state as the run computed them, and adds to the run's ``--json``
a ``bootstrap`` record: the pooled Spearman's 95% percentile interval over ``--boot`` resamples of the
states (pairs stay with their state), the per-state Spearman values and their median with its interval.
Nothing is probed twice: the figures are those of the one ``eval-estimator`` run.

``--exact-cache FILE``: probe each held-out state alone and keep it in ``FILE`` (a pickle, outside the
repository) as soon as it is done; a later run with the same ``--csv``, ``--rows``, ``--max-masked``,
``--mix``, ``--eps`` and ``--seed`` probes only the states the file lacks (a draw of N states begins with the
draw of fewer). The exact probe of 24 states takes an hour or more of one shared CPU thread and does not
depend on the estimator, so it can be made in pieces; the estimator is evaluated (and timed) in the final
run. The record says so (``exact_cached``).
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from mi_core.bench import estimator as bench_estimator
from mi_core.cli import parse
from mi_core.mi.fidelity import correlation, pair_values
from mi_core.mi.probe import probe_by_length


def state_pairs(pred: np.ndarray, exact: np.ndarray, masked: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per state, its ``(predicted, exact)`` masked-pair vectors ``(P_s,)`` (``pred``/``exact``: ``(S, N, N)``)."""
    return [(pair_values(p, m), pair_values(e, m)) for p, e, m in zip(pred, exact, masked)]


def bootstrap(pairs: list[tuple[np.ndarray, np.ndarray]], resamples: int, seed: int = 0) -> dict:
    """Pooled and median per-state Spearman with 95% percentile intervals over resamples of the states."""
    rng = np.random.default_rng(seed)
    per_state = np.array([correlation(stats.spearmanr, p, e) for p, e in pairs])

    def pooled(idx) -> float:
        return correlation(stats.spearmanr, np.concatenate([pairs[i][0] for i in idx]),
                           np.concatenate([pairs[i][1] for i in idx]))

    n = len(pairs)
    draws = [rng.integers(n, size=n) for _ in range(resamples)]
    pooled_boot = np.array([pooled(d) for d in draws])
    finite = np.isfinite(per_state)
    median_boot = np.array([np.nanmedian(per_state[d]) for d in draws])
    return {"resamples": resamples, "seed": seed, "states": n, "pairs": int(sum(len(p) for p, _ in pairs)),
            "spearman": pooled(range(n)), "spearman_ci95": np.nanpercentile(pooled_boot, [2.5, 97.5]).tolist(),
            "spearman_se": float(np.nanstd(pooled_boot, ddof=1)),
            "spearman_median": float(np.median(per_state[finite])),
            "spearman_median_ci95": np.nanpercentile(median_boot, [2.5, 97.5]).tolist(),
            "per_state_spearman": per_state.tolist(), "per_state_pairs": [len(p) for p, _ in pairs]}


def states_key(states) -> str:
    """A digest of the held-out states (their tokens, in order)."""
    h = hashlib.sha256()
    for t in states:
        h.update(np.asarray(t, dtype=np.int64).tobytes() + b"|")
    return h.hexdigest()


def cached_exact(cache: Path, note: dict):
    """A ``run_exact`` that probes each state alone (its ``seconds`` is then its time alone) and keeps every
    finished state in ``cache`` at once, so an interrupted run loses at most the state in progress and a
    later run (the same states, or more of them: a draw of N states starts with the draw of fewer) probes
    only the states the cache lacks."""
    def run(model, states, args, device, engine=None):
        kept = pickle.loads(cache.read_bytes()) if cache.is_file() else {}
        keys = [states_key([t]) for t in states]
        for i, (key, t) in enumerate(zip(keys, states)):
            if key in kept:
                continue
            result = probe_by_length(model, [torch.as_tensor(t, device=device)], eps=args.eps,
                                     max_batch=args.max_batch)[0]
            kept[key] = {"result": result, "eps": args.eps, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            tmp = cache.with_suffix(".tmp")
            tmp.write_bytes(pickle.dumps(kept))
            tmp.replace(cache)
            print(f"exact probe: state {i + 1} of {len(states)} ({result.passes} passes, {result.seconds:.1f} s)",
                  file=sys.stderr, flush=True)
        if any(kept[k]["eps"] != args.eps for k in keys):
            raise SystemExit(f"error: {cache} holds probes of another --eps")
        probes = [kept[k]["result"] for k in keys]
        note.update({"file": cache.name, "probed": sorted({kept[k]["when"] for k in keys})[::len(keys) - 1 or 1],
                     "timing": "exact probe of each state alone, one thread"})
        return probes, [r.seconds for r in probes[: args.timing_states]]
    return run


def take(argv: list[str], flag: str, default=None):
    """Remove ``flag VALUE`` from ``argv``; the value (or ``default``)."""
    if flag not in argv:
        return default
    i = argv.index(flag)
    value = argv[i + 1]
    del argv[i:i + 2]
    return value


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    resamples = int(take(argv, "--boot", 2000))
    cache = take(argv, "--exact-cache")
    if "--json" not in argv:
        raise SystemExit("error: --json FILE is needed: the bootstrap is added to it")
    out = Path(argv[argv.index("--json") + 1])
    kept: list = []
    fidelity = bench_estimator.fidelity

    def keeping(pred, exact, masked, threshold):  # the first call is run_eval's over all states
        if not kept:
            kept.append((pred, exact, masked))
        return fidelity(pred, exact, masked, threshold)

    run_exact, cached = bench_estimator.run_exact, {}
    bench_estimator.fidelity = keeping
    if cache:
        bench_estimator.run_exact = cached_exact(Path(cache), cached)
    try:
        command, args = parse(["eval-estimator", "antibody", *argv])
        code = command.main(args)
    finally:
        bench_estimator.fidelity, bench_estimator.run_exact = fidelity, run_exact
    res = json.loads(out.read_text())
    if cached:
        res["exact_cached"] = cached
    res["script_command"] = "PYTHONPATH=. python scripts/antibody_estimator_eval.py " + " ".join(
        [*argv, "--boot", str(resamples), *(["--exact-cache", Path(cache).name] if cache else [])])
    res["bootstrap"] = bootstrap(state_pairs(*kept[0]), resamples)
    out.write_text(json.dumps(res, indent=2) + "\n")
    b = res["bootstrap"]
    print(f"pooled Spearman {b['spearman']:.3f} (95% CI {b['spearman_ci95'][0]:.3f}-{b['spearman_ci95'][1]:.3f}), "
          f"median per state {b['spearman_median']:.3f} over {b['states']} states", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
