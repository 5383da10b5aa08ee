"""``python -m mi_core eval-model DOMAIN [options] --json OUT``: how well a domain's model predicts masked
positions (cross-entropy, perplexity) against a composition baseline.

A domain offers it by naming a ``model_eval`` part (options and a ``run(args, model, device) -> dict``);
``eval-model antibody --csv FILE --mask-rate 0.15`` gives ``perplexity``, ``composition_perplexity`` and
per-region figures (:mod:`mi_core.domains.antibody.evaluate`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from mi_core.device import pick_device
from mi_core.domain import Domain, add_domain_parsers, get_domain
from mi_core.io import atomic_write_json, check_output
from mi_core.models.loading import load_model_described
from mi_core.options import ArgumentParser, add_force

HEADLINE = ("perplexity", "perplexity_se", "composition_perplexity", "ratio_to_composition", "n_chains", "n_residues")


def options(p: argparse.ArgumentParser, domain: Domain) -> None:
    domain.part("model_eval").add_arguments(p)
    p.add_argument("--json", type=Path, default=None, help="write the results here")
    p.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    add_force(p)


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core eval-model", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(p, options, needs="model_eval")
    return p


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    domain = get_domain(args.domain)
    device = pick_device(args.device, args.threads)
    model, description = load_model_described(args.model, device, domain)
    res = domain.part("model_eval").run(args, model, device)
    res = {"domain": domain.cli_name, "model": description, **res,
           "command": "python -m mi_core eval-model " + shlex.join(argv)}
    if args.json is not None:
        atomic_write_json(args.json, res)
    print(json.dumps({k: res[k] for k in HEADLINE if k in res}, indent=2))
    return 0
