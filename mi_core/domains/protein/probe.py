"""``python -m mi_core probe protein --sequence TEXT|--fasta PATH [--record N] [--model auto|esmc|mdm|PATH]``:
exact pairwise conditional MI between the masked residues of one protein, with the model
:func:`mi_core.domains.protein.model.load_protein_model` picks. Masked residues are ``_`` or ``X`` in the input (and the ambiguity codes ``B``, ``Z``, ``J``),
plus ``--mask-positions 5,9-20`` (1-based, inclusive) and a seeded ``--mask-rate`` of the rest; the probe costs
``1 + 20 * masked`` forward passes."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.commands.probe import COMMON, ProbeOptions, run_probe, summary
from mi_core.device import pick_device
from mi_core.domain import Domain
from mi_core.domains import protein
from mi_core.domains.protein.model import load_protein_model
from mi_core.domains.protein.tokens import fasta_or_plain, read_text_file
from mi_core.io import atomic_write_json, display_path
from mi_core.options import option, parse_positions, seed


@dataclass
class SequenceProbe:
    sequence: str | None = option(None, "amino-acid letters; '_' or X marks a masked residue", group="source",
                                  required=True)
    fasta: Path | None = option(None, "a FASTA file (see --record)", group="source")
    record: int | None = option(None, "which FASTA record to probe, 1-based (default 1)", range=(1, 10_000_000))
    mask_positions: str | None = option(None, "1-based residues to mask, e.g. 5,9-20")
    mask_rate: float = option(0.0, "also mask this fraction of the other residues", range=(0, 1))
    seed: int = seed("seed of --mask-rate")
    model: str = option("auto", "auto (ESM-C when its weights are here, else the MDM), esmc, mdm, or a path "
                        "(.safetensors MDM, .pth ESM-C)")


def options(domain: Domain) -> list:
    return [SequenceProbe, (ProbeOptions, {"max_batch": 128}), *COMMON[1:]]


def masked_state(args, read_sequence, read_records, positions,
                 source: str = "FASTA") -> tuple[str, np.ndarray, np.ndarray]:
    """``(name, native tokens (L,), tokens to probe (L,))`` of ``--sequence`` (``read_sequence(text)``) or
    ``--record`` of ``--fasta`` (``read_records(path, limit)``: ``(name, tokens)`` pairs), with ``--mask-positions``
    (``positions(native, spec)``) and a seeded ``--mask-rate`` masked."""
    if args.sequence is not None:
        if args.record is not None:
            raise ValueError(f"--record selects a {source} record; it does not apply to --sequence")
        name, native = "sequence", read_sequence(args.sequence)
    else:
        record = 1 if args.record is None else args.record
        records = read_records(args.fasta, record)
        if len(records) < record:
            raise ValueError(f"{args.fasta} has {len(records)} record(s); --record {record} asks for more")
        name, native = records[record - 1]
    tokens = native.copy()
    if args.mask_positions:
        tokens[positions(native, args.mask_positions)] = protein.MASK_ID
    visible = np.flatnonzero(tokens != protein.MASK_ID)
    chosen = np.random.default_rng(args.seed).choice(visible, size=round(args.mask_rate * len(visible)), replace=False)
    tokens[chosen] = protein.MASK_ID
    if not (tokens == protein.MASK_ID).any():
        raise ValueError("nothing to probe: no masked residues (write _ or X in the sequence, or use "
                         "--mask-positions / --mask-rate)")
    return name, native, tokens


def fasta_records(path, count: int) -> list[tuple[str, np.ndarray | None]]:
    """``(name, tokens)`` of the first ``count`` records of a FASTA file for ``--record count``: where an earlier
    record is no protein (a gap, a stop codon), only the asked-for one is read (the others' tokens None)."""
    try:
        return [(r.name, r.tokens) for r in protein.read_fasta(path, limit=count)]
    except protein.ProteinInputError as err:
        try:
            pairs = fasta_or_plain(read_text_file(Path(path), "a FASTA file", "FASTA file not found"), "FASTA", count)
        except protein.ProteinInputError:
            pairs = []
        if not pairs or pairs[0][0] is None:  # not records of a FASTA file: its own error says why
            raise err from None
        if len(pairs) < count:  # too few records: masked_state says so
            return [(n, None) for n, _ in pairs]
        name = pairs[-1][0]
        try:
            tokens = protein.tokenize(pairs[-1][1], name=name)
        except protein.ProteinInputError as own:
            raise protein.ProteinInputError(f"{path}: {own}") from None
        return [(n, None) for n, _ in pairs[:-1]] + [(name, tokens)]


def run(args, domain: Domain) -> int:
    name, native, tokens = masked_state(args, lambda text: protein.tokenize(text, name="--sequence"), fasta_records,
                                        lambda native, spec: parse_positions(spec, len(native)))
    device = pick_device(args.device, args.threads)
    model, info = load_protein_model(args.model, device)
    model.check_length(len(tokens), f"the {info.kind} model", "residues", what=name)
    if info.fallback_reason:
        print(f"note: {info.fallback_reason}", file=sys.stderr)
    model_json = {"kind": info.kind, "path": display_path(info.path), "description": info.description,
                  "fallback_reason": info.fallback_reason}
    return probe_and_report(args, domain, model, device, info.description, name, native, tokens, {"model": model_json})


def probe_and_report(args, domain: Domain, model, device, description: str, name: str, native: np.ndarray,
                     tokens: np.ndarray, tail: dict) -> int:
    """Probe ``tokens`` ``(L,)`` and print the summary; ``--json`` gets the record, its ``native`` sequence, the
    masked residues (1-based), ``tail``, the settings and the probe's result."""
    result = run_probe(model, torch.from_numpy(tokens).to(device), args)
    if args.json is not None:
        payload = {"domain": domain.cli_name, "record": name, "sequence": domain.state_text(tokens),
                   "native": domain.state_text(native),
                   "masked_residues": [int(i) + 1 for i in np.flatnonzero(tokens == domain.mask_id)], **tail,
                   "seed": args.seed, "mask_rate": args.mask_rate, "device": str(device), **result.to_json_dict()}
        atomic_write_json(args.json, payload, indent=None)
    print(f"model: {description}\n{name}: {len(tokens)} residues\n" + summary(result, domain))
    return 0
