"""``python -m mi_core probe DOMAIN --state STRING [--eps E] --json OUT``: exact pairwise MI of one state.

``python -m mi_core probe sudoku --puzzle STRING`` (``--puzzle`` and ``--state`` are the same option on a grid)

``sudoku`` probes the 9x9 Sudoku MDM loaded from ``--model``; ``oracle4`` probes the exact 4x4 oracle
(16-character puzzles; every number it gives is exactly known). The puzzle may have several solutions (it
is a state to probe, not a puzzle to solve) but must not conflict or be unsolvable.

``python -m mi_core probe protein --sequence TEXT|--fasta PATH [--record N] [--model auto|esmc|mdm|PATH]``
probes a protein with the model ``mi_core.models.protein.load_protein_model`` picks. Masked residues are
``_`` or ``X`` in the input, plus ``--mask-positions 5,9-20`` (1-based, inclusive) and a seeded
``--mask-rate`` of the rest; the probe costs ``1 + 20 * masked`` forward passes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domains import protein
from mi_core.domains.base import Domain
from mi_core.domains.registry import add_domain_parsers, get_domain
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.probe import ProbeResult, probe
from mi_core.models.loading import load_model_described
from mi_core.options import ArgumentParser, add_force


def common_options(parser: argparse.ArgumentParser, max_batch: int) -> None:
    parser.add_argument("--eps", type=float, default=0.0, help="skip values below this probability (0: exact)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--max-batch", type=int, default=max_batch, help="most sequences per forward pass")
    parser.add_argument("--bf16", action="store_true", help="forward passes under bf16 autocast")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    add_force(parser)


def state_options(parser: argparse.ArgumentParser, domain: Domain) -> None:
    """A domain probed on one state given as text (a Sudoku grid, or a toy domain's positions)."""
    flag = ("--puzzle", "--state") if domain.layout == "grid" else ("--state",)
    parser.add_argument(*flag, dest="state", required=True,
                        help="grid string, row by row, '.' or '0' for blanks" if domain.layout == "grid"
                        else f"the state, one character a position, {domain.mask_char} for masked")
    default = domain.default_file("model")
    parser.add_argument("--model", default=default,
                        help="weights (.safetensors + .json)" if default else "the model (built in: leave unset)")
    common_options(parser, 512)


def protein_options(parser: argparse.ArgumentParser, domain: Domain) -> None:
    parser.description = "Exact pairwise conditional MI between the masked residues of one protein."
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sequence", help="amino-acid letters; '_' or X marks a masked residue")
    source.add_argument("--fasta", type=Path, help="a FASTA file (see --record)")
    parser.add_argument("--record", type=int, default=None, help="which FASTA record to probe, 1-based (default 1)")
    parser.add_argument("--mask-positions", default=None, help="1-based residues to mask, e.g. 5,9-20")
    parser.add_argument("--mask-rate", type=float, default=0.0, help="also mask this fraction of the other residues")
    parser.add_argument("--seed", type=int, default=0, help="seed of --mask-rate")
    parser.add_argument("--model", default="auto", help="auto (ESM-C when its weights are here, else the MDM), "
                        "esmc, mdm, or a path (.safetensors MDM, .pth ESM-C)")
    common_options(parser, 128)


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m mi_core probe", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_domain_parsers(parser, lambda sub, d: (protein_options if d.key == "protein" or sequence_input(d)
                                               else state_options)(sub, d))
    return parser


def sequence_input(domain: Domain) -> bool:
    """A sequence domain read as proteins are (``--sequence``/``--fasta``, ``--mask-positions``), with its own
    checks (``parse_input``), records (``read_records``) and model: antibodies."""
    return bool(getattr(domain, "sequence_input", False))


def load_state(domain: Domain, text: str, model_spec: str | None, device: torch.device):
    """``(model, description, tokens (N,))``; raises a ValueError naming bad input or a bad model file."""
    tokens = domain.parse_input(text)
    model, description = load_model_described(model_spec, device, domain)
    model.check_length(len(tokens), f"the model {model_spec}")
    return model, description, torch.tensor(tokens, device=device)


def run_probe(model, tokens: torch.Tensor, args) -> ProbeResult:
    """:func:`probe` of ``tokens`` ``(N,)`` with the command's options; a tqdm bar on stderr, opened at the
    first report."""
    from tqdm import tqdm

    bar = None

    def update(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, unit="pass", file=sys.stderr, disable=args.no_progress, leave=False)
        bar.update(done - bar.n)

    try:
        return probe(model, tokens, eps=args.eps, max_batch=args.max_batch, progress=update, autocast=args.bf16)
    finally:
        if bar is not None:
            bar.close()


def summary(result: ProbeResult, first: int = 0, unit: str = "positions") -> str:
    """A few lines for the terminal: cost, strongest pair (numbered from ``first``), diagnostics."""
    i, j = divmod(int(result.mi.argmax()), result.mi.shape[0])
    return "\n".join([
        f"probed {int(result.probed.sum())} masked {unit}: {result.passes} passes in {result.seconds:.2f} s",
        f"largest MI {float(result.mi[i, j]):.4g} nats between {unit} {i + first} and {j + first}",
        f"max asymmetry |I(i->j) - I(j->i)| {float(result.asymmetry.max()):.3g}; "
        f"max gap to the paper form {float(result.form_gap.max()):.3g}",
        f"eps {result.eps:g}: error bound {float(result.error_bound.max()):.3g} nats"])


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    if args.domain == "protein":
        return main_protein(args)
    domain = get_domain(args.domain)
    if sequence_input(domain):
        return main_sequence(args, domain)
    device = pick_device(args.device)
    warn_if_slow_bf16(device, args.bf16)
    model, description, tokens = load_state(domain, args.state, args.model, device)
    result = run_probe(model, tokens, args)
    if args.json is not None:
        payload = {"domain": domain.cli_name, "puzzle": domain.state_text(tokens.cpu()), "device": str(device),
                   "model": None if args.model is None else display_path(args.model), "eps": args.eps,
                   **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(summary(result))
    return 0


# ---- proteins ----


def parse_positions(spec: str, length: int) -> list[int]:
    """0-based indices of a 1-based list of residues and inclusive ranges (``"5,9-20"``)."""
    out: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        lo, dash, hi = part.partition("-")
        if not (lo.strip().isascii() and lo.strip().isdigit()) or (dash and not (hi.strip().isascii() and hi.strip().isdigit())):
            raise ValueError(f"--mask-positions: {part!r} is not a residue number or range like 9-20")
        a, b = int(lo), int(hi or lo)
        if not 1 <= a <= b <= length:
            raise ValueError(f"--mask-positions: {part!r} is outside residues 1..{length} (or reversed)")
        out.update(range(a - 1, b))
    return sorted(out)


def mask_random(tokens: np.ndarray, rate: float, seed: int) -> np.ndarray:
    """``tokens`` with ``round(rate * visible)`` of its visible residues masked, chosen by ``seed``."""
    if not 0 <= rate <= 1:
        raise ValueError(f"--mask-rate must be in [0, 1], got {rate}")
    visible = np.flatnonzero(tokens != protein.MASK_ID)
    chosen = np.random.default_rng(seed).choice(visible, size=round(rate * len(visible)), replace=False)
    out = tokens.copy()
    out[chosen] = protein.MASK_ID
    return out


def protein_state(args) -> tuple[str, np.ndarray]:
    """``(name, tokens (L,))`` of the protein to probe, with the requested residues masked."""
    if args.sequence is not None:
        if args.record is not None:
            raise ValueError("--record selects a FASTA record; it does not apply to --sequence")
        name, tokens = "sequence", protein.tokenize(args.sequence, name="--sequence")
    else:
        record = 1 if args.record is None else args.record
        if record < 1:
            raise ValueError(f"--record is 1-based, got {record}")
        records = protein.read_fasta(args.fasta, limit=record)
        if len(records) < record:
            raise ValueError(f"{args.fasta} has {len(records)} record(s); --record {record} asks for more")
        name, tokens = records[record - 1].name, records[record - 1].tokens.copy()
    if args.mask_positions:
        tokens[parse_positions(args.mask_positions, len(tokens))] = protein.MASK_ID
    tokens = mask_random(tokens, args.mask_rate, args.seed)
    if not (tokens == protein.MASK_ID).any():
        raise ValueError("nothing to probe: no masked residues (write _ or X in the sequence, or use "
                         "--mask-positions / --mask-rate)")
    return name, tokens


def main_protein(args) -> int:
    from mi_core.models.protein import load_protein_model

    name, tokens = protein_state(args)
    device = pick_device(args.device)
    model, info = load_protein_model(args.model, device)
    if len(tokens) > model.max_len:
        raise ValueError(f"{name}: {len(tokens)} residues, longer than the {model.max_len} the {info.kind} model takes")
    if info.fallback_reason:
        print(f"note: {info.fallback_reason}", file=sys.stderr)
    result = run_probe(model, torch.from_numpy(tokens).to(device), args)
    if args.json is not None:
        payload = {"domain": "protein", "record": name, "sequence": protein.detokenize(tokens),
                   "masked_residues": [int(i) + 1 for i in np.flatnonzero(tokens == protein.MASK_ID)],
                   "model": {"kind": info.kind, "path": display_path(info.path), "description": info.description,
                             "fallback_reason": info.fallback_reason},
                   "seed": args.seed, "mask_rate": args.mask_rate, "device": str(device), **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(f"model: {info.description}\n{name}: {len(tokens)} residues\n" + summary(result, first=1, unit="residues"))
    return 0


def sequence_state(args, domain: Domain) -> tuple[str, np.ndarray, np.ndarray]:
    """``(name, native tokens (L,), tokens to probe (L,))`` of a :func:`sequence_input` domain's input."""
    if args.sequence is not None:
        if args.record is not None:
            raise ValueError("--record selects a file record; it does not apply to --sequence")
        name, native = "sequence", np.asarray(domain.parse_input(args.sequence), dtype=np.int64)
    else:
        record = 1 if args.record is None else args.record
        if record < 1:
            raise ValueError(f"--record is 1-based, got {record}")
        records = domain.read_records(args.fasta, limit=record)
        if len(records) < record:
            raise ValueError(f"{args.fasta} has {len(records)} record(s); --record {record} asks for more")
        name, native = records[record - 1]
    tokens = native.copy()
    if args.mask_positions:
        named = getattr(domain, "named_positions", None)
        spec = args.mask_positions
        if named is not None and any(ch.isalpha() for ch in spec):
            tokens[named(native, spec)] = domain.mask_id
        else:
            tokens[parse_positions(spec, len(tokens))] = domain.mask_id
    tokens = mask_random(tokens, args.mask_rate, args.seed)
    if not (tokens == domain.mask_id).any():
        raise ValueError("nothing to probe: no masked residues (write _ or X in the sequence, or use "
                         "--mask-positions / --mask-rate)")
    return name, native, tokens


def main_sequence(args, domain: Domain) -> int:
    name, native, tokens = sequence_state(args, domain)
    device = pick_device(args.device)
    model, description = load_model_described(args.model, device, domain)
    model.check_length(len(tokens), description)
    result = run_probe(model, torch.from_numpy(tokens).to(device), args)
    if args.json is not None:
        payload = {"domain": domain.cli_name, "record": name, "sequence": domain.state_text(tokens),
                   "native": domain.state_text(native),
                   "masked_residues": [int(i) + 1 for i in np.flatnonzero(tokens == domain.mask_id)],
                   "model": {"kind": domain.key, "path": display_path(model.weights_path) if model.weights_path else None,
                             "description": description, "fallback_reason": None},
                   "annotation": domain.annotation(native) if hasattr(domain, "annotation") else {},
                   "seed": args.seed, "mask_rate": args.mask_rate, "device": str(device), **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(f"model: {description}\n{name}: {len(tokens)} residues\n" + summary(result, first=1, unit="residues"))
    return 0
