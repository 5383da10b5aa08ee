"""``python -m mi_core generate DOMAIN (--length N | --template TEXT) --sampler NAME``: fill ``--n`` sequences with the
domain's model and print them as FASTA, each with the passes it took: from all-mask sequences of a length (a
fixed-length domain's own when neither is given), or the masked positions of a template (``_`` or ``X``, and
``--mask-positions``: an antibody's regions too, ``--mask-positions cdr3`` redesigns its CDR3). A sampler that reads
MI and is given no estimator reads the one trained on the model, as ``bench`` does. ``--score`` adds each design's
pseudo-log-likelihood over the filled positions to its header (and the template's own, where it had residues there)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.bench.decode import decode_all, with_estimator, with_selector
from mi_core.commands.estimate import with_masked
from mi_core.commands.probe import mask_marks
from mi_core.decoding import make_strategy
from mi_core.decoding.base import check_one_of
from mi_core.device import pick_device
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_text, check_output, display_path
from mi_core.mi.estimator import SHIPPED, shipped_estimator_for
from mi_core.models.loading import load_model_described
from mi_core.options import Device, Force, option, option_flags, parse_sets, plural, seed, set_problem


@dataclass
class GenerateOptions:
    length: int | None = option(None, "generate from all-mask sequences of this length", range=(1, 100_000),
                                group="what", required=True)
    template: str | None = option(None, 'fill the masked positions ("_" or "X"; a protein\'s ambiguity codes B, Z '
                                  'and J too) of this sequence, e.g. "MKT__A___"', group="what")
    mask_positions: str | None = option(None, "also mask these 1-based positions of --template, e.g. 5,9-20 (and "
                                        "a domain's named regions: an antibody's cdr3, cdrs, fr1..fr4)")
    n: int = option(4, "how many sequences (each seeded by --seed and its number: --n 8 begins with --n 4's)",
                    range=(1, 10_000))
    sampler: str = option("sequential", "a registered decoding strategy")
    sets: list[str] = option([], "strategy parameter (repeat)", flags=("--set",), many=True, metavar="KEY=VALUE",
                             check=set_problem)
    temperature: float = option(1.0, "0 = argmax values; 1 samples from the model", range=(0, 100))
    seed: int = seed()
    model: str | None = option(None, "a weights path, or a name the domain gives its models (proteins: auto, ESM-C "
                               "when its weights are here, else the MDM; esmc; mdm); default: the domain's model")
    fasta: Path | None = option(None, "also write the FASTA here", writes=True)
    score: bool = option(False, "add each design's pseudo-log-likelihood to its header: pll, the sum over the filled "
                         "positions of log p(value | every other position) in nats, and pll_mean, per position (one "
                         "more pass per filled position); the template's own, where it had values there, on stderr")


@dataclass
class FixedLengthOptions(GenerateOptions):
    """A fixed-length domain's options: ``--length`` may be left out (all-mask states of the domain's length)."""

    length: int | None = option(None, "generate from all-mask sequences of this length (default: the domain's own)",
                                range=(1, 100_000), group="what")


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = 'is a grid, not a sequence (generate fills domains whose layout is "sequence")'


def serves(domain: Domain) -> bool:
    return domain.layout == "sequence"


def options(domain: Domain) -> list:
    return [GenerateOptions if domain.length is None else FixedLengthOptions, Device, Force]


def template_of(args, domain: Domain) -> np.ndarray:
    """The tokens to fill: ``--template`` with ``--mask-positions`` masked, or ``--length`` masks."""
    if args.template is None:
        if args.mask_positions:
            raise ValueError("--mask-positions masks positions of --template; give one")
        if domain.length is not None and args.length != domain.length:  # the engine's MDM reads any length
            raise ValueError(f"--length {args.length}: a {domain.label} state has {domain.length} "
                             f"{plural(domain.nouns[0])}; give --length {domain.length}")
        return np.full(args.length, domain.mask_id, dtype=np.int64)
    tokens = np.asarray(domain.parse_input(with_masked(domain, args.template, args.mask_positions)), dtype=np.int64)
    if not (tokens == domain.mask_id).any():
        marks = " or ".join(mask_marks(domain))
        raise ValueError(f"--template has no masked {domain.nouns[0]} to generate: write {marks} where one is, "
                         "or give --mask-positions")
    return tokens


PROBED_LENGTHS = 1024  # the all-masked lengths a refused --length is tried against, to say which the domain takes


def masked_lengths(domain: Domain, most: int = PROBED_LENGTHS) -> list[int]:
    """The lengths 1..``most`` whose all-masked state the domain's ``parse_input`` takes."""
    taken = []
    for n in range(1, most + 1):
        try:
            domain.parse_input(domain.mask_char * n)
        except ValueError:
            continue
        taken.append(n)
    return taken


def lengths_text(lengths: list[int], most: int = PROBED_LENGTHS) -> str:
    """``"82-151"``, ``"8, 10, 12, 14 or 16"``, ``"82 or more"`` (a run up to ``most``) of sorted ``lengths``."""
    runs = []
    for n in lengths:
        if runs and runs[-1][1] == n - 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    parts = [f"{a} or more" if b == most else str(a) if a == b else f"{a}-{b}" for a, b in runs]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"


def check_length(domain: Domain, length: int) -> None:
    """A ValueError naming ``--length`` and the all-masked lengths the domain takes when it refuses a state of
    ``length`` masked positions (a bracket word has an even length): the model would fill one no state of the
    domain can be. The domain's own reason names residues the user never wrote (an antibody's conserved motifs),
    so it is said only where no length is taken, or past the lengths tried (``main`` checks those after the model's
    own length, which refuses most of them first)."""
    try:
        domain.parse_input(domain.mask_char * length)
    except ValueError as err:
        if length > PROBED_LENGTHS:
            raise ValueError(f"--length {length}: {err}") from None
        taken, units = masked_lengths(domain), plural(domain.nouns[0])
        if not taken:
            raise ValueError(f"--length {length}: the {domain.key} domain reads no all-masked sequence of 1-"
                             f"{PROBED_LENGTHS} {units} ({err}); give a --template to fill") from None
        raise ValueError(f"--length {length}: the {domain.key} domain generates from all-masked sequences of "
                         f"{lengths_text(taken)} {units} only; give one of those lengths, or a --template to fill"
                         ) from None


def check_fits(model, length: int, by_length: bool, unit: str) -> None:
    """A ValueError naming ``--length`` or ``--template`` when ``length`` positions do not fit ``model``."""
    if length > model.max_len:
        given = f"--length {length} is" if by_length else f"--template has {length} {unit},"
        raise ValueError(f"{given} longer than the {model.max_len} {unit} this model takes; accepted 1..{model.max_len}")
    model.check_length(length, "this model", unit, what="--length" if by_length else "--template")  # a fixed length


@torch.no_grad()
def pseudo_log_likelihoods(model, sequences: list[np.ndarray], positions: np.ndarray, device,
                           batch_size: int = 64) -> list[float]:
    """Each sequence's pseudo-log-likelihood over ``positions`` (nats): the sum of ``log p(x_i | the rest)``, each
    position masked alone (a row per sequence and position, ``batch_size`` rows a pass)."""
    index = torch.full((int(model.value_tokens.max()) + 1,), -1, dtype=torch.long)
    index[model.value_tokens.cpu()] = torch.arange(model.value_tokens.numel())
    rows = [(s, int(p)) for s in range(len(sequences)) for p in positions]
    totals = [0.0] * len(sequences)
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        tokens = torch.as_tensor(np.stack([sequences[s] for s, _ in chunk]), dtype=torch.long)
        at, where = torch.arange(len(chunk)), torch.tensor([p for _, p in chunk])
        values = index[tokens[at, where]]
        tokens[at, where] = model.mask_id
        logp = model(tokens.to(device)).logits.float().log_softmax(-1).cpu()[at, where, values]
        for (s, _), lp in zip(chunk, logp.tolist()):
            totals[s] += lp
    return totals


def score_text(pll: float, count: int) -> str:
    return f"pll={pll:.3f} pll_mean={pll / count:.3f}"


def native_score(args, domain: Domain, model, positions: np.ndarray, device) -> str | None:
    """The template's own residues at the filled ``positions`` scored as the designs are, where it had them all
    (``--mask-positions`` over known values); else None."""
    if args.template is None or not args.mask_positions:
        return None
    native = np.asarray(domain.parse_input(args.template), dtype=np.int64)
    if (native[positions] == domain.mask_id).any():
        return None
    return score_text(pseudo_log_likelihoods(model, [native], positions, device)[0], len(positions))


def record_name(template: str | None) -> str:
    """What the designs are called: ``NAME_design`` of a FASTA record ``>NAME ...`` given as ``--template``, else
    ``sample`` (files of several templates' designs then keep them apart)."""
    header = (template or "").lstrip()
    if not header.startswith(">"):
        return "sample"
    name = "".join(header[1:].split("\n", 1)[0].split()[:1])
    return f"{name}_design" if name else "sample"


def used_params(params: dict, strategy, model) -> dict:
    """``--set`` ``params`` and the files the strategy read where they gave none (the domain's selector or
    estimator, which its environment variable may name) or gave ``shipped``, as the paths they resolved to for
    ``model`` (run first), so a design's header says what made it."""
    files = {key: read_file(strategy, key, model) for key in ("selector", "estimator")
             if params.get(key, SHIPPED) == SHIPPED}
    return {**params, **{k: display_path(v) for k, v in files.items() if isinstance(v, (str, Path))}}


def read_file(strategy, key: str, model):
    """The file the strategy's ``key`` (``selector`` or ``estimator``) named: ``shipped`` resolved for ``model``
    (a ``learned`` strategy keeps the selector it resolved, a MI-guided one only the word)."""
    value = getattr(strategy, key, None)
    return shipped_estimator_for(model) if key == "estimator" and value == SHIPPED else value


def main(args) -> int:
    check_output(args.fasta, args.force, "--fasta")
    domain = get_domain(args.domain)
    if args.template is None and args.length is None:  # a fixed-length domain's: its one length
        args.length = domain.length
    params = check_one_of(args.sampler, parse_sets(args.sets), option_flags(options(domain)))
    strategy = make_strategy(args.sampler, **params)
    template = template_of(args, domain)
    device = pick_device(args.device, args.threads)
    by_length = args.template is None
    if by_length and args.length <= PROBED_LENGTHS:  # before the model loads (AntiBERTy's takes seconds)
        check_length(domain, args.length)
    model, description = load_model_described(args.model, device, domain)
    check_fits(model, len(template), by_length, plural(domain.nouns[0]))
    if by_length and args.length > PROBED_LENGTHS:
        check_length(domain, args.length)
    with_estimator(strategy, model, domain, description)
    with_selector(strategy, domain)
    gen = decode_all(model, [template] * args.n, strategy, temperature=args.temperature, seed=args.seed,
                     batch_size=64, device=device, seeding="per item")
    label = " ".join([f"sampler={args.sampler}", *(f"{k}={v}" for k, v in used_params(params, strategy, model).items()),
                      f"temperature={args.temperature}", f"seed={args.seed}"])
    scores = [""] * args.n
    if args.score:
        positions = np.flatnonzero(template == domain.mask_id)
        scores = [" " + score_text(p, len(positions))
                  for p in pseudo_log_likelihoods(model, gen.sequences, positions, device)]
        if (native := native_score(args, domain, model, positions, device)) is not None:
            print(f"note: the template's own {plural(domain.nouns[0])} at the {len(positions)} filled positions: {native}",
                  file=sys.stderr)
    name = record_name(args.template)
    text = "".join(f">{name}_{i + 1} length={len(s)} passes={p}{f' probe_passes={e}' if e else ''}{c} {label}\n"
                   f"{domain.state_text(s)}\n" for i, (s, p, e, c) in enumerate(zip(gen.sequences, gen.passes,
                                                                                     gen.extra_passes, scores)))
    print(text, end="")
    if args.fasta:
        atomic_write_text(args.fasta, text)
    return 0
