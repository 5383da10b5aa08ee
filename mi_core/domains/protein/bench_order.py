"""``bench-order protein``: the learned order against the step-budget heuristics at the same T.

Unconditional generation of ``--samples`` sequences with lengths drawn from ``--lengths`` at temperature 1, once per
seed in ``--seeds``; the measure is the dipeptide (and amino-acid) JSD to the reference split, in bits, lower is
better, with the sampling floor beside it. eb / mi are matched by the lowest mean dipeptide JSD over the seeds whose
mean passes are <= T."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from mi_core.bench.decode import evaluate
from mi_core.bench.order import (
    estimator_of,
    gammas_of,
    matched,
    order_configs,
    row_bar,
    selector_or_skip,
    strategy_for,
    write_report,
)
from mi_core.bench.report import markdown_table, params_text
from mi_core.device import pick_device
from mi_core.domains.protein.bench import as_templates, draw_lengths, metric_lengths, reference_set
from mi_core.domains.protein.metrics import CompositionMetric
from mi_core.io import display_path
from mi_core.models.loading import load_model_described
from mi_core.options import SEED_MAX, int_list, option, option_text


def protein_rows(model, description: str, lengths_by_seed: dict, reference, budgets: list[int], gammas: list[float],
                 selector: Path | None, estimator: str | None, args) -> list[dict]:
    """One row per (sampler, params, seed) of :func:`~mi_core.bench.order.order_configs` but sequential: JSDs,
    floors, passes; mi is skipped without an estimator. Each row is printed as a JSON line (less its pass
    histogram) as it is done, above a bar that counts them."""
    if estimator is None:
        print(f"no MI estimator for {description}: mi skipped (give --estimator PATH)", flush=True)
    configs = [c for c in order_configs(budgets, ("threshold", "sample"), selector, {"eb": gammas, "mi": gammas},
                                        estimator) if c[0] != "sequential"]

    def row(name: str, params: dict, t: int | None, seed: int, lengths) -> dict:
        metric = CompositionMetric([r.tokens for r in reference], seed=seed)
        strategy = strategy_for(name, params, selector)
        if name == "mi":
            strategy.estimator = estimator
        res, gen = evaluate(model, as_templates(lengths), strategy, metric, temperature=1.0, seed=seed,
                            batch_size=64, device=model.device, seeding="per batch")
        return {"sampler": name, "params": params, "seed": seed,
                "T": t, **{k: res[k] for k in ("n", "mean_passes", "jsd_aa", "jsd_dipeptide", "jsd_aa_floor",
                                               "jsd_dipeptide_floor")}, "seconds": gen.seconds,
                "mean_identity": res["diversity"]["mean_identity"],
                "passes_hist": dict(sorted(Counter(gen.passes).items()))}

    with row_bar(len(configs) * len(lengths_by_seed), args, model=getattr(model, "weights_path", None) or args.model,
                 selector=selector, estimator=estimator) as done:
        return [done([name, params, t, seed], partial(row, name, params, t, seed, lengths),
                     lambda r: {k: v for k, v in r.items() if k != "passes_hist"})
                for (name, params, t), (seed, lengths) in itertools.product(configs, lengths_by_seed.items())]


def protein_summary(rows: list[dict]) -> list[dict]:
    """Rows averaged over seeds per (sampler, params): mean and sd of the JSDs, mean passes."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["sampler"], tuple(sorted(r["params"].items())), r["T"]), []).append(r)
    out = []
    for (name, params, t), rs in groups.items():
        mean = {k: float(np.mean([r[k] for r in rs])) for k in ("jsd_dipeptide", "jsd_aa", "jsd_dipeptide_floor",
                                                                "mean_passes", "mean_identity")}
        sd = float(np.std([r["jsd_dipeptide"] for r in rs], ddof=1)) if len(rs) > 1 else 0.0
        out.append({"sampler": name, "params": dict(params), "T": t, "seeds": len(rs),
                    "jsd_dipeptide": mean["jsd_dipeptide"], "jsd_dipeptide_sd": sd, "jsd_aa": mean["jsd_aa"],
                    "floor": mean["jsd_dipeptide_floor"], "mean_passes": mean["mean_passes"],
                    "mean_identity": mean["mean_identity"]})
    return out


def protein_report(summary: list[dict], budgets: list[int]) -> str:
    def fmt(r):
        return dict(r, params=params_text(r["params"]),
                    jsd=f"{r['jsd_dipeptide']:.4f} ± {r['jsd_dipeptide_sd']:.4f}", aa=f"{r['jsd_aa']:.4f}",
                    passes=f"{r['mean_passes']:.1f}", floor=f"{r['floor']:.4f}")
    cols = [("sampler", "sampler"), ("params", "params"), ("jsd", "dipeptide JSD (mean ± sd over seeds)"),
            ("aa", "aa JSD"), ("passes", "mean passes"), ("floor", "floor")]
    out = []
    for t in budgets:
        table = [r for r in summary if r["T"] == t] + [
            r for n in ("eb", "mi") if (r := matched(summary, n, t, best=lambda r: -r["jsd_dipeptide"]))]
        out += [f"### T = {t}", "", markdown_table([fmt(r) for r in table], cols), ""]
    return "\n".join(out)


@dataclass
class ProteinOrderBench:
    reference: Path = option(None, "FASTA; its reference split is the target set", required=True)
    samples: int = option(300, "sequences per seed", range=(1, 1_000_000))
    lengths: str = option("50-100", "LO-HI lengths")
    estimator: Path | None = option(None, "MI estimator for mi (default: the shipped one when it was trained on "
                                    "--model)")
    seeds: list[int] = option([0, 1], "seeds, comma-separated (each draws its own lengths and samples)",
                              parse=int_list, range=(0, SEED_MAX))


options = ProteinOrderBench


def run_bench(args, domain) -> int:
    lo, hi = metric_lengths(args.lengths)
    seeds, budgets = args.seeds, args.budgets
    model, description = load_model_described(args.model or "mdm", pick_device(args.device, args.threads), domain)
    selector = selector_or_skip(args, domain, model)  # None: no learned rows (a user's own model, no --selector)
    estimator = estimator_of(args.estimator, domain, model)  # a wrong file fails before the first row
    lengths_by_seed = {seed: draw_lengths(args.samples, lo, hi, seed) for seed in seeds}
    reference = reference_set(args.reference)
    gammas = gammas_of(args, (8.0, 16.0, 32.0, 64.0))
    rows = protein_rows(model, description, lengths_by_seed, reference, budgets, gammas, selector, estimator, args)
    summary = protein_summary(rows)
    payload = {"model": description, "selector": selector and str(selector), "estimator": estimator and display_path(estimator),
               "lengths": args.lengths, "samples": args.samples, "seeds": seeds, "rows": rows, "summary": summary}
    write_report(args, payload, f"{args.samples} sequences per seed (lengths {args.lengths}, seeds {option_text(seeds)}), "
                 f"reference {args.reference.name} (reference split), temperature 1, selector {selector or 'none (no learned rows)'}\n\n"
                 + protein_report(summary, budgets), echo=True)
    return 0
