"""Benchmark work on the task engine (:mod:`mi_core.scale.engine`): sweep cells and chunks of held-out states,
run by workers that load the domain's model once per process. A sweep cell decodes exactly as the local
sweep loop does, so its row equals the local row except for ``seconds``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mi_core.bench.decode import evaluate, lacks_mi_source, warm_up
from mi_core.decoding import make_strategy
from mi_core.device import pick_device
from mi_core.scale.engine import EngineConfig, Task, run_tasks


def run_cells(cells: list, maker, engine: EngineConfig) -> list[dict]:
    tasks = [Task(i, cell) for i, cell in enumerate(cells)]
    return run_tasks(tasks, maker, engine, desc="sweep cells", unit="cell").results


def absolute(path) -> str | None:
    """A path as the workers should open it: absolute when it names a file here, else as is."""
    if path is None:
        return None
    p = Path(path)
    return str(p.resolve()) if p.exists() else str(path)


@dataclass(frozen=True)
class ModelWorker:
    """Picklable worker factory: the model loaded once per process; a payload ``(function, *args)`` runs as
    ``function(model, device, *args)``."""

    domain: str
    model: str | None  # None: the domain's own default
    device: str
    iterations: int = 0  # > 0: a recurrent model's iterations per pass

    def __call__(self):
        from mi_core.models.iterations import run_for
        from mi_core.models.loading import load_model

        device = pick_device(self.device)
        model = load_model(self.model, device, domain=self.domain)
        if self.iterations:
            run_for(model, self.iterations)
        return lambda payload: payload[0](model, device, *payload[1:])


def chunks_on_engine(fn, items: list, args, engine: EngineConfig, *extra, chunk: int = 8) -> list:
    """``fn(model, device, items[lo : lo + chunk], lo, *extra)`` for every chunk of ``items`` on ``engine``."""
    payloads = [(fn, items[lo : lo + chunk], lo, *extra) for lo in range(0, len(items), chunk)]
    return run_cells(payloads, worker_of(args), engine)


def sweep_cell(model, device, templates, metric, run: dict, name: str, params: dict, estimator: str | None) -> dict:
    strategy = make_strategy(name, **params)
    if lacks_mi_source(strategy):
        strategy.estimator = estimator
    warm_up(model, templates, strategy, device=device, **run)
    res, gen = evaluate(model, templates, strategy, metric(), device=device, **run)
    return res | {"seconds": gen.seconds}


def sweep_cells(configs, strategies, inputs, run: dict, args, engine: EngineConfig) -> list[dict]:
    run = {k: v for k, v in run.items() if k != "device"}
    payloads = [(sweep_cell, inputs.templates, inputs.metric, run, name, params,
                 absolute(s.estimator) if getattr(s, "estimator", None) else None)
                for (name, params), s in zip(configs, strategies)]
    return run_cells(payloads, worker_of(args), engine)


def worker_of(args) -> ModelWorker:
    return ModelWorker(args.domain, absolute(args.model), args.device, getattr(args, "iterations", 0))
