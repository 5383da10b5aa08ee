"""Generate protein sequences with any registered sampler and measure them against a reference set.

Generation starts from all-mask sequences of given lengths (unconditional) or from templates whose
known residues are kept (in-filling). The decode loop needs one length per batch, so targets are
grouped by length. Temperature defaults to 1.0 here: at temperature 0 (argmax) an all-mask start is
deterministic, so every sample of one length would be the same sequence.

The measure (:func:`evaluate`): Jensen-Shannon divergence of amino-acid and dipeptide compositions
from the reference set, and diversity (mean pairwise identity, unique fraction); see
``mi_core.bench.protein_metrics``.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.bench.protein_metrics import diversity, jsd_aa, jsd_dipeptide, matched_sample
from mi_core.decoding import decode_final
from mi_core.domains.protein import MASK_ID, ProteinRecord, detokenize, read_fasta, split_records
from mi_core.mi.estimator import load_estimator_meta
from mi_core.models.protein import load_protein_model
from mi_core.options import parse_lengths  # noqa: F401  (re-exported: its old home)

REFERENCE_SPLITS = ("reference", "val", "train", "all")


def load_model(spec: str | Path = "auto", device: torch.device | str = "cpu"):
    """``(model, info)`` for ``--model`` (``auto``, ``esmc``, ``mdm`` or a weights path; see
    ``mi_core.models.protein``); ``info`` is a JSON-ready dict: ``kind``, ``path``, ``description``,
    ``fallback_reason`` and ``params``.
    """
    model, info = load_protein_model(str(spec), device)
    return model, {"kind": info.kind, "path": str(info.path), "description": info.description,
                   "fallback_reason": info.fallback_reason, "params": sum(p.numel() for p in model.parameters())}


DEFAULT_ESTIMATOR = Path("assets/protein_mi_estimator.safetensors")


def lacks_mi_source(strategy) -> bool:
    """True for an MI-guided strategy (``mi``) with neither an estimator path nor an ``mi_fn``."""
    return hasattr(strategy, "estimator") and strategy.estimator is None and getattr(strategy, "mi_fn", None) is None


def info_for_json(info: dict) -> dict:
    """``info`` with its path relative to the repository root when inside it (for result files)."""
    from mi_core.io import display_path

    return {**info, "path": display_path(info["path"])}


def estimator_for(info: dict, path: str | Path | None = None) -> Path | None:
    """The MI estimator for MI-guided sampling with the model ``info`` describes: ``path`` when given, else
    the shipped one when it was trained on this very model file, else None."""
    if path is not None:
        return Path(path)
    if not DEFAULT_ESTIMATOR.is_file():
        return None
    trained_on = load_estimator_meta(DEFAULT_ESTIMATOR).get("mdm")
    same = trained_on is not None and Path(trained_on).resolve() == Path(info["path"]).resolve()
    return DEFAULT_ESTIMATOR if same else None


def attach_estimator(strategy, info: dict):
    """Point an ``mi`` strategy without an MI source at :func:`estimator_for`'s estimator.

    Raises:
        ValueError: there is none for this model; give ``--set estimator=PATH``.
    """
    if lacks_mi_source(strategy):
        path = estimator_for(info)
        if path is None:
            raise ValueError(f"sampler {strategy.name!r} needs an MI estimator for {info['description']}: "
                             "--set estimator=PATH")
        strategy.estimator = str(path)
    return strategy


def draw_lengths(n: int, lo: int, hi: int, seed: int = 0) -> list[int]:
    """``n`` lengths drawn uniformly from ``lo..hi`` inclusive by a generator seeded with ``seed``."""
    if n < 1:
        raise ValueError(f"the number of samples must be >= 1, got {n}")
    return np.random.default_rng(seed).integers(lo, hi + 1, size=n).tolist()


def reference_set(path: str | Path, split: str = "reference", limit: int | None = None) -> list[ProteinRecord]:
    """The reference sequences: FASTA records read with the strict rule (``read_fasta(strict=True)``:
    sequences with non-standard letters or > 10% X are skipped), then one split of
    ``split_records`` (``"all"``: every record), the first ``limit`` of them if given.

    Raises:
        FileNotFoundError, ProteinInputError; ValueError for an unknown or empty split.
    """
    if split not in REFERENCE_SPLITS:
        raise ValueError(f"unknown reference split {split!r}; choose one of {', '.join(REFERENCE_SPLITS)}")
    if limit is not None and limit < 1:
        raise ValueError(f"--limit-reference must be >= 1, got {limit}")
    records = read_fasta(path, strict=True)
    if split != "all":
        records = split_records(records)[split]
        if not records:
            raise ValueError(f"{path}: no sequence falls in the {split!r} split; use --reference-split all")
    return records[:limit] if limit else records


@dataclass
class Generation:
    """``sequences``: token arrays ``(L_i,)`` in the order asked; ``passes``: decode passes of each;
    ``extra_passes``: passes a strategy spent on its own (``mi_exact``'s probe; else 0); ``seconds``: wall
    time of all decoding."""

    sequences: list[np.ndarray]
    passes: list[int]
    extra_passes: list[int]
    seconds: float


def as_templates(targets) -> list[np.ndarray]:
    """Lengths become all-mask templates; token arrays are kept as given (int64).

    Raises:
        ValueError: a length < 1, an empty template or a token id outside 0..20.
    """
    out = []
    for t in targets:
        if isinstance(t, (int, np.integer)):
            if t < 1:
                raise ValueError(f"sequence length must be >= 1, got {t}")
            out.append(np.full(int(t), MASK_ID, dtype=np.int64))
            continue
        arr = np.asarray(t, dtype=np.int64)
        if arr.ndim != 1 or arr.size == 0 or arr.min() < 0 or arr.max() > 20:
            raise ValueError("a template must be a non-empty 1-D array of token ids 0..20 (0 = to generate)")
        out.append(arr)
    return out


@torch.no_grad()
def generate(model, targets, strategy, *, temperature: float = 1.0, seed: int = 0, batch_size: int = 64,
             device: torch.device | str = "cpu", bf16: bool = False, progress=None) -> Generation:
    """Sample one sequence per target with ``strategy`` through ``decode_final``.

    Args:
        targets: lengths (unconditional, from all-mask) or token arrays ``(L,)`` with 0 where to generate
            (in-filling; the other residues are kept).
        temperature: > 0 samples values from ``p ** (1 / temperature)``; 0 is argmax (all samples of one
            length from all-mask are then identical).
        seed: seeds every batch (each batch gets its own seed drawn from ``seed``): same seed, same output.
        progress: called with the number of sequences finished after each batch.
    Raises:
        ValueError: a bad target, or one longer than the model's ``max_len``.
    """
    templates = as_templates(targets)
    max_len = getattr(model, "max_len", None)
    for t in templates:
        if max_len is not None and len(t) > max_len:
            raise ValueError(f"a sequence of {len(t)} residues is longer than the {max_len} this model takes")
    sequences: list[np.ndarray | None] = [None] * len(templates)
    passes, extra = [0] * len(templates), [0] * len(templates)
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for idx in _batches(templates, batch_size):
        tokens = torch.from_numpy(np.stack([templates[i] for i in idx])).to(device)
        batch_seed = int(rng.integers(2**62))
        if not bool((tokens == model.mask_id).any()):  # nothing to fill: the template is the answer
            final_tokens = tokens
            final_passes = final_extra = torch.zeros(len(idx), dtype=torch.long)
        else:
            autocast = torch.autocast(torch.device(device).type, dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
            with autocast:
                final = decode_final(model, tokens, strategy, temperature=temperature, seed=batch_seed)
            final_tokens, final_passes = final.tokens, final.passes
            final_extra = final.extra_passes if final.extra_passes is not None else torch.zeros_like(final.passes)
        rows_cpu = final_tokens.cpu().numpy()  # one read-back per batch
        for row, (i, p, e) in enumerate(zip(idx, final_passes.tolist(), final_extra.tolist())):
            sequences[i] = rows_cpu[row]
            passes[i], extra[i] = p, e
        if progress:
            progress(len(idx))
    return Generation(sequences, passes, extra, round(time.perf_counter() - start, 3))


def warm_up(model, lengths: list[int], strategy, device, bf16: bool = False) -> None:
    """Generate one sequence of the shortest length once, untimed (one-off start-up costs)."""
    generate(model, [min(lengths)], strategy, batch_size=1, device=device, bf16=bf16)


def _batches(templates: list[np.ndarray], batch_size: int) -> list[list[int]]:
    """Indices grouped by length (ascending), each group cut into batches of at most ``batch_size``."""
    if batch_size < 1:
        raise ValueError(f"batch size must be >= 1, got {batch_size}")
    groups: dict[int, list[int]] = {}
    for i, t in enumerate(templates):
        groups.setdefault(len(t), []).append(i)
    batches = []
    for n in sorted(groups):
        idx = groups[n]
        batches += [idx[lo : lo + batch_size] for lo in range(0, len(idx), batch_size)]
    return batches


def evaluate(model, lengths: list[int], reference: list[ProteinRecord], strategy, *, temperature: float = 1.0,
             seed: int = 0, batch_size: int = 64, device: torch.device | str = "cpu", bf16: bool = False,
             progress=None, max_pairs: int = 2000) -> dict:
    """Generate one sequence per length and measure the set against ``reference``.

    Returns ``n``, ``mean_passes``, ``passes_min`` / ``passes_median`` / ``passes_max``,
    ``mean_extra_passes`` (a strategy's own passes, e.g. ``mi_exact``'s probe; not in ``passes``), ``jsd_aa`` and
    ``jsd_dipeptide`` (bits, 0..1), ``jsd_aa_floor`` and ``jsd_dipeptide_floor`` (the same for a sample of
    the reference of the generated lengths: what sampling noise alone gives), ``diversity``
    (:func:`protein_metrics.diversity` with the reference's own identity), ``reference_n``, ``seconds``,
    and per sequence ``passes`` and ``sequences`` (letters).
    """
    gen = generate(model, lengths, strategy, temperature=temperature, seed=seed, batch_size=batch_size,
                   device=device, bf16=bf16, progress=progress)
    ref = [r.tokens for r in reference]
    passes = np.asarray(gen.passes)
    floor = matched_sample(ref, [len(s) for s in gen.sequences], seed)
    return {
        "n": len(gen.sequences),
        "mean_passes": float(passes.mean()),
        "passes_min": int(passes.min()),
        "passes_median": float(np.median(passes)),
        "passes_max": int(passes.max()),
        "mean_extra_passes": float(np.mean(gen.extra_passes)),
        "jsd_aa": jsd_aa(gen.sequences, ref),
        "jsd_dipeptide": jsd_dipeptide(gen.sequences, ref),
        "jsd_aa_floor": jsd_aa(floor, ref),
        "jsd_dipeptide_floor": jsd_dipeptide(floor, ref),
        "diversity": diversity(gen.sequences, ref, max_pairs=max_pairs, seed=seed),
        "reference_n": len(ref),
        "seconds": gen.seconds,
        "passes": gen.passes,
        "sequences": [detokenize(s) for s in gen.sequences],
    }
