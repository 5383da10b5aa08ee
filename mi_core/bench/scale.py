"""Benchmark work on the task engine (:mod:`mi_core.scale.engine`): sweep cells and chunks of held-out states,
run here or by workers that load the domain's model once per process. A cell decodes the same way wherever it
runs, so its row differs only in ``seconds``."""

from __future__ import annotations

from dataclasses import dataclass

from mi_core.bench.decode import evaluate, lacks_mi_source, load, warm_up
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.scale.engine import EngineConfig, Task, absolute, run_tasks


def runner(model, device):
    """The worker of a loaded model: a payload ``(function, *args)`` runs as ``function(model, device, *args)``."""
    return lambda payload: payload[0](model, device, *payload[1:])


@dataclass(frozen=True)
class ModelWorker:
    """Picklable worker factory: the model loaded once per process, then :func:`runner`."""

    domain: str
    model: str | None  # None: the domain's own default
    device: str
    iterations: int = 0  # > 0: a recurrent model's iterations per pass
    views: int = 1  # > 1: the model averaged over the domain's symmetric views

    def __call__(self):
        device = pick_device(self.device)
        return runner(load(self, get_domain(self.domain), device)[0], device)  # as ``bench`` loads it


def run_cells(payloads: list, args, engine: EngineConfig, here=None, done=None) -> list:
    """Every payload's result in order, on ``engine``: locally by ``here`` (a :func:`runner`; None: a
    :class:`ModelWorker` of ``args``), on Ray by workers of ``args``; ``done(index, result)`` as each finishes."""
    worker = ModelWorker(args.domain, absolute(args.model), args.device, getattr(args, "iterations", 0),
                         getattr(args, "views", 1))
    tasks = [Task(i, p) for i, p in enumerate(payloads)]
    save = None if done is None else (lambda task, result: done(task.index, result))
    return run_tasks(tasks, worker, engine, save=save, local_worker=here, desc="cells", unit="cell").results


def chunks_on_engine(fn, items: list, args, engine: EngineConfig, *extra, chunk: int = 8, done=None,
                     start: int = 0) -> list:
    """``fn(model, device, items[lo : lo + chunk], start + lo, *extra)`` for every chunk of ``items`` (those of a
    list from its ``start``) on ``engine``; ``done(chunk index, result)`` as each finishes."""
    return run_cells([(fn, items[lo : lo + chunk], start + lo, *extra) for lo in range(0, len(items), chunk)], args,
                     engine, done=done)


def sweep_cell(model, device, templates, metric, run: dict, name: str, params: dict, estimator: str | None) -> dict:
    """One sampler setting on every template, after an untimed warm-up decode: the metric and ``seconds``."""
    strategy = make_strategy(name, **params)
    if lacks_mi_source(strategy):
        strategy.estimator = estimator
    warm_up(model, templates, strategy, device=device, **run)
    res, gen = evaluate(model, templates, strategy, metric(), device=device, **run)
    return res | {"seconds": gen.seconds}
