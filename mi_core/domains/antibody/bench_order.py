"""``bench-order antibody``: CDR in-filling (``bench antibody``'s inputs: ``--region`` masked, the framework given,
greedy) at each budget T by random, top_prob and top_margin at ``steps=T`` and the learned order in each of
``--modes`` (where a selector is given or the domain names one), then eb and mi at each of ``--gammas`` (default:
the domain's) and sequential. Scored by recovery, the share of filled residues equal to the native, mean over chains
± its standard error (the chain as unit), with each row's paired difference to top_margin at the same T. Per T, eb
and mi show their best setting whose mean passes are <= T."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mi_core.bench.order import matched, mode_list, order_rows, write_report
from mi_core.bench.report import markdown_table, params_text
from mi_core.domains.antibody.infill import CDRInfill, InfillInput, infill_chains, mean_se
from mi_core.io import ROOT
from mi_core.models.base import load_meta
from mi_core.options import option


@dataclass
class AntibodyOrderBench(InfillInput):
    modes: list[str] = option(["threshold", "rank"], "modes of the learned rows, comma-separated (threshold, rank, "
                              "paced, sample)", parse=mode_list)
    estimator: str | None = option(None, "MI estimator of the mi rows (default: the one trained on the model's own "
                                   "weights)")
    bf16: bool = option(False, "bf16 autocast for the model passes (faster on CPUs with AMX)")
    batch_size: int = option(8, "chains decoded together", range=(1, 65_536))


options = AntibodyOrderBench


def chain_recovery(inputs, gen) -> dict:
    """``per_chain``: each chain's recovery in ``gen`` (a decode of ``inputs.templates``), by the inputs' metric."""
    metric = inputs.metric()
    for index, (start, final) in enumerate(zip(inputs.templates, gen.sequences)):
        metric.update(index, start, final, 0)
    return {"per_chain": metric.per_chain()}


def paired(rows: list[dict]) -> None:
    """Each row of a budget T gets ``vs_margin`` and ``vs_margin_se``: its mean per-chain difference to top_margin at
    T (eb, mi and sequential: at every T, as ``vs_margin_T{t}``, whether or not their passes fit it; the report
    shows those that fit)."""
    margins = {r["T"]: np.asarray(r["per_chain"]) for r in rows if r["sampler"] == "top_margin"}
    for r in rows:
        for t, base in margins.items():
            if r["T"] in (t, None):
                mean, se = mean_se(np.asarray(r["per_chain"]) - base)
                key = "vs_margin" if r["T"] == t else f"vs_margin_T{t}"
                r[key], r[key + "_se"] = mean, se


def report(rows: list[dict], budgets: list[int]) -> str:
    def fmt(r, t):
        key = "vs_margin" if r["T"] == t else f"vs_margin_T{t}"
        return {"sampler": r["sampler"], "params": params_text(r["params"]),
                "recovery": f"{r['recovery']:.3f} ± {r['recovery_se']:.3f}", "passes": f"{r['mean_passes']:.2f}",
                "diff": f"{r[key]:+.3f} ± {r[key + '_se']:.3f}" if key in r else "-"}
    cols = [("sampler", "sampler"), ("params", "params"), ("recovery", "recovery ± SE"),
            ("diff", "minus top_margin ± SE (paired)"), ("passes", "mean passes")]
    out = []
    best = lambda r: (r["recovery"], -r["mean_passes"])  # noqa: E731
    for t in budgets:
        table = [r for r in rows if r["T"] == t] + [m for n in ("eb", "mi") if (m := matched(rows, n, t, best))]
        out += [f"### T = {t}", "", markdown_table([fmt(r, t) for r in table], cols), ""]
    rest = [r for r in rows if r["T"] is None]
    out += ["### Every eb, mi and sequential row", "",
            markdown_table([fmt(r, None) for r in rest], [c for c in cols if c[0] != "diff"]), ""]
    return "\n".join(out)


def trained_on(selector, inputs) -> str | None:
    """A note when chains benched are chains ``selector`` was trained or tuned on (the ``csv``, ``rows`` and
    ``tune_rows`` its JSON records); None when none is, or its record or data file is not here."""
    try:
        meta = load_meta(selector)
        path = Path(meta["csv"])
        seen = {tuple(c.tokens.tolist()) for key in ("rows", "tune_rows")
                for c in infill_chains(path if path.is_file() else ROOT / path, meta[key])}
    except (OSError, ValueError, KeyError, TypeError):
        return None
    shared = [name for name, native in zip(inputs.fields["chain_names"], inputs.natives)
              if tuple(native.tolist()) in seen]
    if not shared:
        return None
    return (f"note: {len(shared)} of the {len(inputs.natives)} chains benched (e.g. {shared[0]!r}) are chains "
            f"{selector} was trained or tuned on (rows {meta['rows']} and {meta['tune_rows']} of "
            f"{Path(meta['csv']).name}): its learned rows are not scored on held-out chains")


def run_bench(args, domain) -> int:
    inputs = CDRInfill(domain, args)
    selector = args.selector or domain.default_file("selector")
    if selector is not None and (note := trained_on(selector, inputs)):
        print(note, file=sys.stderr)
    rows, description, selector = order_rows(args, domain, inputs, args.modes, extra=chain_recovery,
                                             shown=lambda r: {k: v for k, v in r.items() if k != "per_chain"})
    paired(rows)
    named = selector if selector and args.modes else "none (no learned rows)"
    write_report(args, rows, f"{inputs.name}: {len(inputs.templates)} chains, {description}, selector {named}, "
                 f"{'bf16' if args.bf16 else 'fp32'} passes\n\n" + report(rows, args.budgets), echo=True)
    return 0
