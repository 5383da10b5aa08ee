"""``python -m mi_core train DOMAIN [options]``: train a masked diffusion model (``train DOMAIN --help`` lists
the domain's options). Weights go to ``runs/<domain>_mdm_<time>.safetensors`` unless ``--out`` is given;
``--resume`` continues a stopped run.
"""

from __future__ import annotations

import sys

from mi_core.domain import Domain, get_domain
from mi_core.train import mdm


def serves(domain: Domain) -> bool:
    return domain.trainer is not None


def describe(domain: Domain) -> str:
    return f"{sys.modules[domain.trainer.__module__].__doc__}\n\n{mdm.__doc__}"


def options(domain: Domain) -> list:
    return mdm.options(domain.part("trainer"))


def main(args) -> int:
    mdm.run(args, get_domain(args.domain).part("trainer"))
    return 0
