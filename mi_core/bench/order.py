"""``python -m mi_core bench-order DOMAIN ...``: the learned order against the step-budget heuristics at the
same T, and eb / mi at matching mean passes. The options every domain shares are here; a domain's
benchmark (``Domain.order_bench``: a module with ``options`` and ``run_bench(args, domain)``)
adds its own, decodes its inputs and writes the JSON rows and the Markdown report (``--md``, default: the
JSON path with ``.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.decoding import make_strategy
from mi_core.domain import get_domain
from mi_core.io import check_output
from mi_core.options import Device, Force, option, seed


def parse_ints(spec: str, flag: str) -> list[int]:
    """``"0,1,2"`` -> ``[0, 1, 2]``; raises ValueError naming ``flag`` otherwise."""
    try:
        values = [int(v) for v in spec.split(",")]
    except ValueError:
        raise ValueError(f"{flag} expects integers separated by commas, got {spec!r}") from None
    return values


def strategy_for(name: str, params: dict, selector: Path):
    """The sampler ``name`` with ``params``; the learned ones read ``selector``."""
    return make_strategy(name, **params, **({"selector": str(selector)} if name.startswith("learned") else {}))


def matched(rows: list[dict], name: str, budget: int, best=lambda r: (r["accuracy"], -r["mean_passes"])) -> dict | None:
    """The best ``name`` row (the most accurate, or by ``best``) with mean passes <= ``budget``."""
    fits = [r for r in rows if r["sampler"] == name and r["mean_passes"] <= budget]
    return max(fits, key=best) if fits else None


@dataclass
class OrderBench:
    """The options of every domain's order benchmark."""

    model: Path | None = option(None, "default: the shipped MDM of the domain")
    selector: Path | None = option(None, "default: the domain's shipped order selector")
    budgets: str = option("5,10,15,20", "step budgets T, comma-separated")
    gammas: str | None = option(None, "eb / mi budgets (default: the domain's); empty: skip")
    seed: int = seed()
    json: Path = option(None, "write the rows here", required=True)
    md: Path | None = option(None, "Markdown report (default: JSON path with .md)")


def serves(domain) -> bool:
    return domain.order_bench is not None


def describe(domain) -> str:
    return domain.order_bench.__doc__


def options(domain) -> list:
    return [domain.order_bench.options, OrderBench, Device, Force]


def main(args) -> int:
    check_output(args.json, args.force)
    check_output(args.md or args.json.with_suffix(".md"), args.force, "--md")
    domain = get_domain(args.domain)
    return domain.order_bench.run_bench(args, domain)
