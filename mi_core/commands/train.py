"""``python -m mi_core train DOMAIN [options]``: train a masked diffusion model (``train DOMAIN --help`` lists
the domain's options). Weights go to ``runs/<domain>_mdm_<time>.safetensors`` unless ``--out`` is given;
``--force`` overwrites an existing file; ``--resume`` continues a stopped run. One loop trains every domain
(:mod:`mi_core.train.mdm`); each domain names its task (``Domain.trainer``): ``SudokuTask`` in
:mod:`mi_core.domains.sudoku.train` and ``ProteinTask`` in :mod:`mi_core.domains.protein.train`.
"""

from __future__ import annotations

import argparse
import sys

from mi_core.domain import add_domain_parsers, get_domain
from mi_core.options import ArgumentParser
from mi_core.train import mdm


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The parser and, per domain key, its subparser (whose defaults ``--resume`` compares against)."""
    parser = ArgumentParser(prog="python -m mi_core train", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    subs = {}

    def options(sub: argparse.ArgumentParser, domain) -> None:
        task = domain.part("trainer")
        sub.formatter_class = argparse.RawDescriptionHelpFormatter
        sub.description = f"{sys.modules[task.__module__].__doc__}\n\n{mdm.__doc__}"
        mdm.add_arguments(sub, task)
        subs[domain.key] = sub

    add_domain_parsers(parser, options, needs="trainer")
    return parser, subs


def main(argv: list[str] | None = None) -> int:
    parser, _ = build_parser()
    args = parser.parse_args(argv)
    mdm.run(args, get_domain(args.domain).part("trainer"))
    return 0
