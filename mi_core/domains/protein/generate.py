"""``python -m mi_core generate protein (--length N | --template TEXT) --sampler NAME``: sample sequences
and print them as FASTA, with the passes each one took."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.bench.decode import with_estimator, with_selector
from mi_core.decoding import make_strategy
from mi_core.decoding.base import check_one_of
from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.domains.protein import MASK_ID, detokenize, tokenize
from mi_core.domains.protein import bench as protein_bench
from mi_core.io import atomic_write_text, check_output
from mi_core.models.loading import load_model_described
from mi_core.options import Device, Force, option, parse_sets, seed


@dataclass
class GenerateOptions:
    length: int | None = option(None, "generate from all-mask sequences of this length", range=(1, 100_000),
                                group="what", required=True)
    template: str | None = option(None, 'fill the "_" / "X" positions of this sequence, e.g. "MKT__A___" (the '
                                  'ambiguity codes B, Z and J are filled too)', group="what")
    n: int = option(4, "how many sequences", range=(1, 10_000))
    sampler: str = option("sequential", "a registered decoding strategy")
    sets: list[str] = option([], "strategy parameter (repeat)", flags=("--set",), many=True, metavar="KEY=VALUE")
    temperature: float = option(1.0, "0 = argmax values; 1 samples from the model", range=(0, 100))
    seed: int = seed()
    model: str = option("auto", "auto (ESM-C when its weights are here, else the MDM), esmc, mdm or a weights path")
    fasta: Path | None = option(None, "also write the FASTA here")


OPTIONS_OF_DOMAIN = [GenerateOptions, Device, Force]


def main(args) -> int:
    check_output(args.fasta, args.force, "--fasta")
    params = check_one_of(args.sampler, parse_sets(args.sets))
    strategy = make_strategy(args.sampler, **params)
    if args.template is not None:
        template = tokenize(args.template, name="--template")
        if not (template == MASK_ID).any():
            raise ValueError("--template has no '_' or 'X' position to generate")
        targets, length = [template] * args.n, len(template)
    else:
        targets, length = [args.length] * args.n, args.length
    device = pick_device(args.device, args.threads)
    domain = get_domain("protein")
    model, description = load_model_described(args.model, device, domain)
    if length > model.max_len:
        given = f"--length {length} is" if args.template is None else f"--template has {length} residues,"
        raise ValueError(f"{given} longer than the {model.max_len} residues this model takes; "
                         f"accepted 1..{model.max_len}")
    with_estimator(strategy, model, domain, description)
    with_selector(strategy, domain)
    gen = protein_bench.generate(model, targets, strategy, temperature=args.temperature, seed=args.seed, device=device)
    label = " ".join([f"sampler={args.sampler}", *(f"{k}={v}" for k, v in params.items()),
                      f"temperature={args.temperature}", f"seed={args.seed}"])
    text = "".join(f">sample_{i + 1} length={len(s)} passes={p}{f' probe_passes={e}' if e else ''} {label}\n"
                   f"{detokenize(s)}\n" for i, (s, p, e) in enumerate(zip(gen.sequences, gen.passes, gen.extra_passes)))
    print(text, end="")
    if args.fasta:
        atomic_write_text(args.fasta, text)
    return 0
