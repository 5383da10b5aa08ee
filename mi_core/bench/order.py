"""``python -m mi_core bench-order DOMAIN ...``: the learned order against the step-budget heuristics at the
same T, and eb / mi at matching mean passes. The options every domain shares are here; a domain's
benchmark (``Domain.order_bench``: a module with ``add_arguments(parser)`` and ``run_bench(args, domain)``)
adds its own, decodes its inputs and writes the JSON rows and the Markdown report (``--md``, default: the
JSON path with ``.md``).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mi_core.decoding import make_strategy
from mi_core.domain import add_domain_parsers, get_domain
from mi_core.io import check_output
from mi_core.options import ArgumentParser, add_force


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


def common_options(p) -> None:
    """The options of every domain's order benchmark."""
    p.add_argument("--model", type=Path, default=None, help="default: the shipped MDM of the domain")
    p.add_argument("--selector", type=Path, default=None, help="default: the domain's shipped order selector")
    p.add_argument("--budgets", default="5,10,15,20")
    p.add_argument("--gammas", default=None, help="eb / mi budgets (default: the domain's); empty: skip")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--md", type=Path, default=None, help="Markdown report (default: JSON path with .md)")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    add_force(p)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m mi_core bench-order", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)

    def options(sub, domain):
        sub.description = domain.order_bench.__doc__
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        domain.order_bench.add_arguments(sub)
        common_options(sub)

    add_domain_parsers(p, options, needs="order_bench")
    args = p.parse_args(argv)
    check_output(args.json, args.force)
    check_output(args.md or args.json.with_suffix(".md"), args.force, "--md")
    domain = get_domain(args.domain)
    return domain.order_bench.run_bench(args, domain)


if __name__ == "__main__":
    raise SystemExit(main())
