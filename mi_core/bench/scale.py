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
class ModelWorker:
    """Picklable worker factory: the domain's model loaded once per process; a task's payload is
    ``(function, *args)``, run as ``function(model, device, *args)`` (a module-level function)."""

    domain: str
    model: str
    device: str

    def __call__(self):
        from mi_core.models.loading import load_model

        device = pick_device(self.device)
        model = load_model(self.model, device, domain=self.domain)
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
    maker = ModelWorker("sudoku9", absolute(args.model), args.device)
    return run_cells([(suite_cell, records, sampler, params, args.bf16) for records, sampler, params in cells],
                     maker, engine)


def chunks_on_engine(fn, items: list, args, engine: EngineConfig, *extra, chunk: int = 8) -> list:
    """``fn(model, device, items[lo : lo + chunk], lo, *extra)`` for every chunk of ``items``, on ``engine``'s
    workers (each loads ``args.domain``'s model ``args.model`` once), in order."""
    payloads = [(fn, items[lo : lo + chunk], lo, *extra) for lo in range(0, len(items), chunk)]
    return run_cells(payloads, ModelWorker(args.domain, absolute(args.model), args.device), engine)
