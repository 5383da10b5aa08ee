"""``python -m mi_core train DOMAIN [options]``: train a masked diffusion model (``train DOMAIN --help`` lists
the domain's options). Weights go to ``runs/<domain>_mdm_<time>.safetensors`` unless ``--out`` is given;
``--force`` overwrites an existing file. Each domain names its trainer (``Domain.trainer``, a module with
``add_arguments(parser)`` and ``run(args, parser)``): ``mi_core.train.sudoku_mdm`` and
``mi_core.train.protein_mdm``.
"""

from __future__ import annotations

import argparse

from mi_core.domains.registry import add_domain_parsers, get_domain
from mi_core.options import ArgumentParser


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The parser and, per domain key, its subparser (whose defaults ``--resume`` compares against)."""
    parser = ArgumentParser(prog="python -m mi_core train", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    subs = {}

    def options(sub: argparse.ArgumentParser, domain) -> None:
        trainer = domain.part("trainer")
        sub.formatter_class, sub.description = argparse.RawDescriptionHelpFormatter, trainer.__doc__
        trainer.add_arguments(sub)
        subs[domain.key] = sub

    add_domain_parsers(parser, options, needs="trainer")
    return parser, subs


def main(argv: list[str] | None = None) -> int:
    parser, subs = build_parser()
    args = parser.parse_args(argv)
    get_domain(args.domain).part("trainer").run(args, subs[args.domain])
    return 0
