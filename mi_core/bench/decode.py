"""Decode many inputs of any domain with one strategy, then score them with the domain's metric.

:func:`decode_all` groups inputs by length (the decode loop takes one length per batch), cuts each group
into batches and decodes them; :func:`evaluate` feeds each result to a metric (:mod:`mi_core.bench.metrics`).
Seeds: ``"per item"`` gives input ``i`` its own generator seed (:func:`item_seed`), so results do not depend
on the batch size; ``"per batch"`` draws one seed per batch from ``seed`` (the protein benchmarks' recorded
figures were made that way).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import torch

from mi_core.decoding import decode_final
from mi_core.domains.sudoku import read_puzzles

SEEDINGS = ("per item", "per batch")


@dataclass
class Generation:
    """``sequences``: token arrays in input order; ``passes``: decode passes of each; ``extra_passes``:
    passes a strategy spent on its own (``mi_exact``'s probe; else 0); ``seconds``: decoding wall time."""

    sequences: list[np.ndarray]
    passes: list[int]
    extra_passes: list[int]
    seconds: float


def item_seed(seed: int, index: int) -> int:
    """The decode seed of input ``index`` of a run seeded by ``seed`` (independent of batching)."""
    return (seed * 1_000_003 + index) % 2**63  # runs with neighbouring seeds share no stream


def length_batches(lengths: list[int], batch_size: int) -> list[list[int]]:
    """Indices grouped by length (ascending; input order within a length), cut into batches."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch size must be an integer >= 1, got {batch_size!r}")
    groups: dict[int, list[int]] = {}
    for i, n in enumerate(lengths):
        groups.setdefault(n, []).append(i)
    return [groups[n][lo:lo + batch_size] for n in sorted(groups) for lo in range(0, len(groups[n]), batch_size)]


@torch.no_grad()
def decode_all(model, templates: list[np.ndarray], strategy, *, temperature: float = 0.0, seed: int = 0,
               batch_size: int = 256, device: torch.device | str = "cpu", bf16: bool = False, progress=None,
               seeding: str = "per item") -> Generation:
    """Decode every template (token ids, ``model.mask_id`` where to fill) with ``strategy``.

    ``bf16`` runs the forward passes under bf16 autocast; ``progress(n)`` is called after each batch.
    """
    if seeding not in SEEDINGS:
        raise ValueError(f"seeding must be one of {SEEDINGS}, got {seeding!r}")
    max_len = model.max_len
    for t in templates:
        if len(t) > max_len:
            raise ValueError(f"a sequence of {len(t)} positions is longer than the {max_len} this model takes")
    n = len(templates)
    sequences: list[np.ndarray | None] = [None] * n
    passes, extra = [0] * n, [0] * n
    rng = np.random.default_rng(seed)
    start = time.perf_counter()
    for idx in length_batches([len(t) for t in templates], batch_size):
        tokens = torch.from_numpy(np.stack([np.asarray(templates[i], dtype=np.int64) for i in idx])).to(device)
        seeds = [item_seed(seed, i) for i in idx] if seeding == "per item" else int(rng.integers(2**62))
        if not bool((tokens == model.mask_id).any()):  # nothing to fill: the template is the answer
            final_tokens, final_passes = tokens, torch.zeros(len(idx), dtype=torch.long)
            final_extra = final_passes
        else:
            autocast = (torch.autocast(torch.device(device).type, dtype=torch.bfloat16) if bf16
                        else contextlib.nullcontext())
            with autocast:
                final = decode_final(model, tokens, strategy, temperature=temperature, seed=seeds)
            final_tokens, final_passes = final.tokens, final.passes
            final_extra = final.extra_passes if final.extra_passes is not None else torch.zeros_like(final.passes)
        rows = final_tokens.cpu().numpy()  # one read-back per batch
        for row, (i, p, e) in enumerate(zip(idx, final_passes.tolist(), final_extra.tolist())):
            sequences[i], passes[i], extra[i] = rows[row], p, e
        if progress:
            progress(len(idx))
    return Generation(sequences, passes, extra, round(time.perf_counter() - start, 3))


def evaluate(model, templates: list[np.ndarray], strategy, metric, **kwargs) -> tuple[dict, Generation]:
    """:func:`decode_all`, then ``metric.update`` with every result; ``(metric.compute(), generation)``."""
    gen = decode_all(model, templates, strategy, **kwargs)
    for i, (start, final) in enumerate(zip(templates, gen.sequences)):
        metric.update(i, np.asarray(start), final, gen.passes[i], gen.extra_passes[i])
    return metric.compute(), gen


def read_inputs(domain, path, limit: int | None = None) -> tuple[list[np.ndarray], object]:
    """The states of a file and the domain's metric over them. A grid domain reads Sudoku files (``.txt`` one
    puzzle a line, or ``.csv`` with ``puzzle`` and optional ``solution`` and ``level`` columns); any other
    domain reads text, one state a line (``#`` comments and blank lines skipped), each optionally
    followed by whitespace or a comma and its solution. A state given
    without a solution takes the domain's own (:meth:`Domain.solution`, e.g. a Sudoku solver's); a metric
    with ``needs_solution = False`` scores states without one.

    Raises:
        ValueError: a line that does not parse, naming it; a state without a solution; no state at all.
    """
    metric_cls = domain.part("metric")
    needs_solution = getattr(metric_cls, "needs_solution", True)
    if domain.layout == "grid":  # Sudoku files: .txt or .csv with a puzzle column (and solution, level)
        records = read_puzzles(path, limit=limit)
        if any(len(r.puzzle) != domain.cells for r in records):
            raise ValueError(f"{path} holds puzzles of another size than {domain.label} ({domain.cells} cells)")
        templates = [np.asarray(domain.parse_state(r.puzzle)) for r in records]
        solutions = [domain.parse_state(r.solution) if r.solution else domain.solution(t.tolist())
                     for r, t in zip(records, templates)]
        missing = [r.line for r, s in zip(records, solutions) if s is None]
        if missing:
            raise ValueError(f"{path}, line {missing[0]}: the puzzle has no unique solution; benchmarks need one")
        return templates, metric_cls(solutions, [r.level for r in records], domain.mask_id)
    templates, solutions = [], []
    with open(path, encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.replace(",", " ").split()
            try:
                state = domain.parse_state(parts[0])
                solution = domain.parse_state(parts[1]) if len(parts) > 1 else domain.solution(state)
            except ValueError as err:
                raise ValueError(f"{path}, line {lineno}: {err}") from None
            if solution is None and needs_solution:
                raise ValueError(f"{path}, line {lineno}: no solution given, and the {domain.label} domain finds "
                                 "no unique one: write the solution after the state")
            templates.append(np.asarray(state))
            solutions.append(solution)
            if limit is not None and len(templates) == limit:
                break
    if not templates:
        raise ValueError(f"{path} holds no {domain.label} state")
    return templates, metric_cls(solutions, None, domain.mask_id)
