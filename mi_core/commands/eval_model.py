"""``python -m mi_core eval-model DOMAIN [options] --json OUT``: how well a domain's model predicts masked
positions (cross-entropy, perplexity) against a composition baseline. A domain offers it by naming a
``model_eval`` part (options and a ``run(args, model, device) -> dict``).
"""

from __future__ import annotations

import json
import shlex

from mi_core.device import pick_device
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_json, check_output
from mi_core.models.loading import load_model_described
from mi_core.options import Device, Force, JsonOut

HEADLINE = ("perplexity", "perplexity_se", "composition_perplexity", "ratio_to_composition", "n_chains", "n_residues")


def serves(domain: Domain) -> bool:
    return getattr(domain, "model_eval", None) is not None


def options(domain: Domain) -> list:
    return [domain.part("model_eval").options, JsonOut, Device, Force]


def main(args) -> int:
    check_output(args.json, args.force)
    domain = get_domain(args.domain)
    device = pick_device(args.device, args.threads)
    model, description = load_model_described(args.model, device, domain)
    res = domain.part("model_eval").run(args, model, device)
    res = {"domain": domain.cli_name, "model": description, **res,
           "command": "python -m mi_core eval-model " + shlex.join(args.argv)}
    if args.json is not None:
        atomic_write_json(args.json, res)
    print(json.dumps({k: res[k] for k in HEADLINE if k in res}, indent=2))
    return 0
