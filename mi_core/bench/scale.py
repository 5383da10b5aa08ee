"""Sweep cells on the task engine (:mod:`mi_core.scale.engine`): one task per (sampler, params) cell, a
worker that loads the model once per process and decodes the cell's whole puzzle (or length) set.

A cell decodes exactly as the local sweep loop does (same seeds, same batches), after its own untimed
warm-up, so its row equals the local row except for ``seconds``. Kept apart from :mod:`mi_core.bench.sweep`
so that module only calls :func:`sudoku_cells` / :func:`protein_cells` when ``--engine ray`` is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from pathlib import Path

from mi_core.bench import protein as protein_bench
from mi_core.bench.sudoku import evaluate, warm_up, with_default_estimator
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.scale.engine import EngineConfig, Task, run_tasks


def sudoku_cell(model, records, device, batch_size: int, seed: int, bf16: bool, cell: tuple[str, dict]) -> dict:
    """One Sudoku sweep cell ``(sampler, params)``: :func:`evaluate`'s result without per-puzzle passes."""
    name, params = cell
    strategy = with_default_estimator(make_strategy(name, **params))
    warm_up(model, records, strategy, device, bf16)
    res = evaluate(model, records, strategy, batch_size=batch_size, seed=seed, device=device, bf16=bf16)
    res.pop("passes")
    return res


@dataclass(frozen=True)
class SudokuCells:
    """Picklable worker factory for :func:`sudoku_cell` (the model loaded once per process)."""

    model: str
    device: str
    records: tuple
    batch_size: int
    seed: int
    bf16: bool

    def __call__(self):
        from mi_core.models.sudoku_mdm import load_sudoku_mdm

        device = pick_device(self.device)
        model = load_sudoku_mdm(Path(self.model), device)
        return partial(sudoku_cell, model, list(self.records), device, self.batch_size, self.seed, self.bf16)


def protein_cell(model, lengths, reference, device, temperature: float, seed: int, batch_size: int, bf16: bool,
                 cell: tuple[str, dict, str | None]) -> dict:
    """One protein sweep cell ``(sampler, params, estimator path or None)``: :func:`protein_bench.evaluate`'s
    result without the per-sequence passes and sequences."""
    name, params, estimator = cell
    strategy = make_strategy(name, **params)
    if estimator is not None:
        strategy.estimator = estimator
    protein_bench.warm_up(model, lengths, strategy, device, bf16)
    res = protein_bench.evaluate(model, lengths, reference, strategy, temperature=temperature, seed=seed,
                                 batch_size=batch_size, device=device, bf16=bf16)
    for key in ("passes", "sequences"):
        res.pop(key)
    return res


@dataclass(frozen=True)
class ProteinCells:
    """Picklable worker factory for :func:`protein_cell`."""

    model: str
    device: str
    lengths: tuple
    reference: tuple
    temperature: float
    seed: int
    batch_size: int
    bf16: bool

    def __call__(self):
        device = pick_device(self.device)
        model, _ = protein_bench.load_model(self.model, device)
        return partial(protein_cell, model, list(self.lengths), list(self.reference), device, self.temperature,
                       self.seed, self.batch_size, self.bf16)


def run_cells(cells: list, maker, engine: EngineConfig) -> list[dict]:
    """The result of every cell, in order, from ``engine`` (one progress bar over cells)."""
    tasks = [Task(i, cell) for i, cell in enumerate(cells)]
    return run_tasks(tasks, maker, engine, desc="sweep cells", unit="cell").results


def absolute(path) -> str:
    """A path as the workers should open it: absolute when it names a file here (a keyword stays as is)."""
    p = Path(path)
    return str(p.resolve()) if p.exists() else str(path)


def sudoku_cells(configs, records, args, engine: EngineConfig) -> list[dict]:
    """:func:`run_cells` of a Sudoku sweep's ``(sampler, params)`` configs with the sweep's options."""
    maker = SudokuCells(absolute(args.model), args.device, tuple(records), args.batch_size, args.seed, args.bf16)
    return run_cells([(name, params) for name, params in configs], maker, engine)


def protein_cells(configs, lengths, reference, args, engine: EngineConfig) -> list[dict]:
    """:func:`run_cells` of a protein sweep's ``(sampler, params, strategy)`` configs."""
    maker = ProteinCells(absolute(args.model), args.device, tuple(lengths), tuple(reference), args.temperature,
                         args.seed, args.batch_size, args.bf16)
    cells = [(name, params, getattr(strategy, "estimator", None)) for name, params, strategy in configs]
    return run_cells([(n, p, absolute(e) if isinstance(e, str) else e) for n, p, e in cells], maker, engine)


@dataclass(frozen=True)
class SudokuModelWorker:
    """Picklable worker factory: the Sudoku MDM loaded once per process; a task's payload is
    ``(function, *args)``, run as ``function(model, device, *args)`` (a module-level function)."""

    model: str
    device: str

    def __call__(self):
        from mi_core.models.sudoku_mdm import load_sudoku_mdm

        device = pick_device(self.device)
        model = load_sudoku_mdm(Path(self.model), device)
        return lambda payload: payload[0](model, device, *payload[1:])


def suite_cell(model, device, records, sampler: str, params: dict, bf16: bool) -> dict:
    """One ``bench-suite`` cell: a sampler on one puzzle set, decoded as the local loop does."""
    strategy = make_strategy(sampler, **params)
    warm_up(model, records, strategy, device, bf16)
    res = evaluate(model, records, strategy, device=device, bf16=bf16)
    res.pop("passes")
    return res


def suite_cells(cells: list[tuple], args, engine: EngineConfig) -> list[dict]:
    """``bench-suite`` results of ``(records, sampler, params)`` cells on ``engine``, in order."""
    maker = SudokuModelWorker(absolute(args.model), args.device)
    return run_cells([(suite_cell, records, sampler, params, args.bf16) for records, sampler, params in cells],
                     maker, engine)


def exact_chunk(model, device, run_exact, tokens, eps: float, max_batch: int, timing_states: int):
    """``run_exact(model, tokens, ...)`` (``mi_core.bench.estimator.run_exact``, passed in) of one chunk of
    held-out states ``(S, N)`` on this worker: ``(mi, one-at-a-time seconds, passes, batched seconds)``."""
    import torch

    return run_exact(model, torch.as_tensor(tokens, device=device), eps, max_batch, timing_states)


def exact_on_engine(run_exact, tokens, args, engine: EngineConfig, chunk: int = 8):
    """:func:`exact_chunk` of every ``chunk`` states of ``tokens`` on ``engine``, joined: exact MI ``(S, N, N)``,
    the one-at-a-time seconds of the first ``args.timing_states`` states, passes per state, and the batched
    probe seconds summed over chunks (compute time, not the wall time of the spread-out run)."""
    import numpy as np

    host = tokens.cpu().numpy()
    starts = range(0, len(host), chunk)
    payloads = [(exact_chunk, run_exact, host[lo : lo + chunk], args.eps, args.max_batch,
                 max(0, min(chunk, args.timing_states - lo))) for lo in starts]
    parts = run_cells(payloads, SudokuModelWorker(absolute(args.model), args.device), engine)
    mi = np.concatenate([p[0] for p in parts])
    seconds = [s for p in parts for s in p[1]]
    passes = [n for p in parts for n in p[2]]
    return mi, seconds, passes, float(sum(p[3] for p in parts))


@dataclass(frozen=True)
class ProteinModelWorker:
    """Picklable worker factory: the protein MDM loaded once per process; payloads as for
    :class:`SudokuModelWorker`."""

    model: str
    device: str

    def __call__(self):
        from mi_core.models.protein_mdm import load_protein_mdm

        device = pick_device(self.device)
        model = load_protein_mdm(Path(self.model), device)
        return lambda payload: payload[0](model, device, *payload[1:])


def probe_chunk(model, device, probe_by_length, states, eps: float, max_batch: int) -> list:
    """``probe_by_length`` (``mi_core.mi.probe``, passed in) of a chunk of states ``[(N_s,)]`` on this worker."""
    import torch

    return probe_by_length(model, [torch.as_tensor(t, device=device) for t in states], eps=eps, max_batch=max_batch)


def protein_probes_on_engine(probe_by_length, states: list, args, engine: EngineConfig, chunk: int = 8) -> list:
    """The CPU :class:`~mi_core.mi.probe.ProbeResult` of every held-out protein state, probed ``chunk`` states
    per task on ``engine`` (each chunk one ``probe_many`` call per distinct length)."""
    host = [t.cpu().numpy() if hasattr(t, "cpu") else t for t in states]
    payloads = [(probe_chunk, probe_by_length, host[lo : lo + chunk], args.eps, args.max_batch)
                for lo in range(0, len(host), chunk)]
    parts = run_cells(payloads, ProteinModelWorker(absolute(args.model), args.device), engine)
    return [r for part in parts for r in part]
