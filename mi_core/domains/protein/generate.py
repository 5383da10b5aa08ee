"""``python -m mi_core generate protein (--length N | --template TEXT) --sampler NAME [--set key=value ...]
[--n 4] [--fasta OUT]``: sample sequences and print them as FASTA, with the passes each one took.

A template is a sequence with ``_`` (or ``X``) where residues are to be generated; its other residues are
kept. Temperature defaults to 1.0: at 0 (argmax) every sample from the same start is the same sequence.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from mi_core.bench.decode import with_estimator
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.domains.protein import MASK_ID, detokenize, tokenize
from mi_core.domains.protein import bench as protein_bench
from mi_core.io import atomic_write_text, check_output
from mi_core.models.loading import load_model_described
from mi_core.options import ArgumentParser, add_force, parse_sets


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core generate", description=__doc__)
    p.add_argument("domain", choices=["protein"])
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--length", type=int, help="generate from all-mask sequences of this length")
    what.add_argument("--template", help='fill the "_" / "X" positions of this sequence, e.g. "MKT__A___"')
    p.add_argument("--n", type=int, default=4, help="how many sequences")
    p.add_argument("--sampler", default="sequential", help="a registered decoding strategy")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE", help="strategy parameter")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--model", default="auto", help="auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")
    p.add_argument("--device", default="auto")
    p.add_argument("--fasta", type=Path, default=None, help="also write the FASTA here")
    add_force(p)
    return p


def to_fasta(sequences, passes: list[int], label: str) -> str:
    """FASTA text: one record per sequence, the header naming its number, length, passes and the sampler."""
    return "".join(f">sample_{i + 1} length={len(s)} passes={p} {label}\n{detokenize(s)}\n"
                   for i, (s, p) in enumerate(zip(sequences, passes)))


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_output(args.fasta, args.force, "--fasta")
    params = parse_sets(args.sets)
    strategy = make_strategy(args.sampler, **params)
    if args.template is not None:
        template = tokenize(args.template, name="--template")
        if not (template == MASK_ID).any():
            raise ValueError("--template has no '_' or 'X' position to generate")
        targets = [template] * args.n
    else:
        targets = [args.length] * args.n
    device = pick_device(args.device)
    domain = get_domain("protein")
    model, description = load_model_described(args.model, device, domain)
    length = args.length if args.template is None else len(targets[0])
    if length > model.max_len:  # before any sequence is allocated
        raise ValueError(f"--length {length} is longer than the {model.max_len} residues the model "
                         f"({description}) takes; accepted 1..{model.max_len}")
    with_estimator(strategy, model, domain, description)
    gen = protein_bench.generate(model, targets, strategy, temperature=args.temperature, seed=args.seed, device=device)
    label = " ".join([f"sampler={args.sampler}", *(f"{k}={v}" for k, v in params.items()),
                      f"temperature={args.temperature}", f"seed={args.seed}"])
    text = to_fasta(gen.sequences, gen.passes, label)
    print(text, end="")
    if args.fasta:
        atomic_write_text(args.fasta, text)
    return 0
