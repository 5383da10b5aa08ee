"""Run a list of independent tasks (probe shards, sweep cells) in this process or on Ray actors.

:func:`run_tasks` takes :class:`Task` s, a picklable ``make_worker()`` that builds a worker (loads the model)
once per process, and an :class:`EngineConfig`: ``local`` runs the tasks here (with ``local_worker`` when
the caller already holds a model); ``ray`` starts ``workers`` actors, restarting a killed one and retrying
its task. A task whose ``path`` is already a file is skipped (a re-run resumes); results come back in task
order and ``save(task, result)`` runs in this process as each arrives, so a cluster needs no shared file
system. Ray is imported only when ``engine == "ray"``.
"""

from __future__ import annotations

import os
import re
import socket
import sys
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Callable

from tqdm import tqdm

from mi_core.io import ROOT
from mi_core.options import counted, option

ENGINES = ("local", "ray")
INSTALL_HINT = "pip install -r requirements-scale.txt (or pip install '.[scale]')"


class EngineError(ValueError):
    """A bad engine setting, or Ray asked for but not installed."""


class WorkerFailed(EngineError, RuntimeError):
    """A Ray actor that kept dying or could not start: one line, which the command line prints as ``error:``."""


_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _last_line(err: BaseException) -> str:
    """The last line of a Ray error's text (the remote exception's ``Type: message``), colour codes dropped."""
    lines = [line.strip() for line in _COLOUR.sub("", str(err)).splitlines() if line.strip()]
    return lines[-1] if lines else type(err).__name__


@dataclass(frozen=True)
class EngineConfig:
    """Where tasks run; also the commands' engine options. ``address`` None: start a local Ray cluster."""

    engine: str = option("local", "local: this process (default); ray: actors on a Ray cluster "
                         "(pip install '.[scale]')", choices=ENGINES)
    address: str | None = option(None, "with --engine ray: an existing cluster (e.g. auto or ray://host:10001); "
                                 "default a local one", flags=("--ray-address",), metavar="RAY_ADDRESS")
    workers: int = option(1, "with --engine ray: actors", range=(1, 100_000))
    num_gpus: float = option(0.0, "with --engine ray: GPUs per actor", range=(0, 64))
    num_cpus: float = option(1.0, "with --engine ray: CPUs per actor", range=(0, 1024))
    retries: int = option(3, "with --engine ray: restarts of a dead actor and retries of its task", range=(0, 100))

    def __post_init__(self):
        if self.engine not in ENGINES:
            raise EngineError(f"--engine {self.engine!r}: choose one of {', '.join(ENGINES)}")
        if self.workers < 1:
            raise EngineError(f"--workers {self.workers}: need at least one worker")
        if self.num_gpus < 0 or self.num_cpus < 0 or self.retries < 0:
            raise EngineError("--num-gpus, --num-cpus and --retries must be >= 0")
        if self.engine == "local" and (self.address or self.num_gpus or self.workers > 1):
            raise EngineError("--ray-address, --num-gpus and --workers > 1 need --engine ray")
        if self.engine == "ray":
            try:
                import ray  # noqa: F401
            except ModuleNotFoundError:
                raise EngineError(f"--engine ray needs Ray, which is not installed here: {INSTALL_HINT}; "
                                  "or run without --engine (the local engine needs no Ray)") from None


@dataclass(frozen=True)
class Task:
    """One unit of work: ``index``, a picklable ``payload``, and ``path``, the file it produces (or None)."""

    index: int
    payload: Any = None
    path: Path | None = None

    def done(self) -> bool:
        return self.path is not None and Path(self.path).is_file()


@dataclass
class RunReport:
    """What :func:`run_tasks` did: results in task order (None for skipped tasks) and counts."""

    results: list = field(default_factory=list)
    skipped: int = 0
    ran: int = 0


def absolute(path) -> str | None:
    """A path as the workers should open it: absolute when it names a file here, else as is (a keyword such as
    ``esmc``). A Ray actor starts in its cluster's working directory, not in this process's."""
    if path is None:
        return None
    p = Path(path)
    return str(p.resolve()) if p.exists() else str(path)


def engine_from_args(args) -> EngineConfig:
    """The command's engine settings, checked before any work (a ``--ray-address`` where nothing answers too)."""
    cfg = EngineConfig(**{f.name: getattr(args, f.name) for f in fields(EngineConfig)})
    if cfg.engine == "ray" and cfg.address is not None:
        _check_answers(cfg.address)
    return cfg


def run_tasks(tasks: list[Task], make_worker: Callable[[], Callable[[Any], Any]], cfg: EngineConfig | None = None,
              save: Callable[[Task, Any], None] | None = None, local_worker: Callable[[Any], Any] | None = None,
              desc: str = "tasks", unit: str = "task") -> RunReport:
    """Run every task not yet done; ``worker(task.payload) -> result``."""
    cfg = cfg or EngineConfig()
    todo = [t for t in tasks if not t.done()]
    report = RunReport(results=[None] * len(tasks), skipped=len(tasks) - len(todo))
    if not todo:
        return report
    place = {t.index: n for n, t in enumerate(tasks)}

    with tqdm(total=len(tasks), initial=report.skipped, desc=desc, unit=unit, file=sys.stderr) as bar:

        def finish(task: Task, result) -> None:
            if save is not None:
                save(task, result)
            report.results[place[task.index]] = result
            report.ran += 1
            bar.update(1)

        if cfg.engine == "local":
            worker = local_worker or make_worker()
            for task in todo:
                finish(task, worker(task.payload))
        else:
            _run_on_ray(todo, make_worker, cfg, finish)
    return report


def _start_ray(cfg: EngineConfig):
    """``(ray, started)``: Ray connected; ``started``: this call owns the connection (shut it down)."""
    import ray

    if ray.is_initialized():
        return ray, False
    env = None
    if cfg.address is None:  # a local cluster: its workers import mi_core from this checkout
        path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {"env_vars": {"PYTHONPATH": path}}
    else:
        _check_answers(cfg.address)
    try:
        # no address: a cluster of this process's own ("local"), not one a `ray start` left running here
        ray.init(address=cfg.address or "local", runtime_env=env, include_dashboard=False, log_to_driver=False,
                 configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError, TimeoutError) as err:  # no cluster there, a bad address
        where = "a local Ray cluster" if cfg.address is None else f"--ray-address {cfg.address}"
        raise EngineError(f"{where}: {_last_line(err)}") from None
    return ray, True


def _check_answers(address: str, timeout: float = 5.0) -> None:
    """EngineError unless something listens at ``address`` (``HOST:PORT`` or ``ray://HOST:PORT``; others are
    left to Ray): Ray itself retries an unanswered address 20 times, about 36 s each, then crashes."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not host or not port.isdigit() or "/" in host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except OSError as err:
        raise EngineError(f"--ray-address {address}: nothing answers there ({err.strerror or err}); start the "
                          "cluster (ray start --head) or give its address (auto on one of its nodes)") from None


def _actor_class(ray, cfg: EngineConfig):
    @ray.remote
    class ShardWorker:
        def __init__(self, make_worker):
            self.worker = make_worker()

        def run(self, payload):
            return self.worker(payload)

    return ShardWorker.options(num_cpus=cfg.num_cpus, num_gpus=cfg.num_gpus, max_restarts=cfg.retries,
                               max_task_retries=cfg.retries)


def _run_on_ray(todo: list[Task], make_worker, cfg: EngineConfig, finish) -> None:
    """Hand tasks to ``cfg.workers`` actors, one at a time each, and ``finish`` results as they arrive."""
    ray, started = _start_ray(cfg)
    actors = []
    try:
        worker_cls = _actor_class(ray, cfg)
        factory = ray.put(make_worker)
        actors = [worker_cls.remote(factory) for _ in range(min(cfg.workers, len(todo)))]
        pending: dict = {}
        queue = list(todo)

        def submit(actor) -> None:
            if queue:
                task = queue.pop(0)
                pending[actor.run.remote(task.payload)] = (task, actor)

        for actor in actors:
            submit(actor)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            task, actor = pending.pop(ready[0])
            try:
                result = ray.get(ready[0])
            except ray.exceptions.RayActorError as err:
                if getattr(err, "actor_init_failed", False):  # its worker raised while loading (a missing file)
                    raise WorkerFailed(f"task {task.index}: its Ray worker could not start: {_last_line(err)}") from None
                raise WorkerFailed(f"task {task.index}: its Ray actor died {counted(cfg.retries + 1, 'time')} (killed, "
                                   f"out of memory or its node lost; --retries {cfg.retries})") from None
            except ray.exceptions.RayTaskError as err:  # a bad input: the task's own error, as the local engine's
                cause = getattr(err, "cause", None)
                if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
                    raise cause from None
                raise EngineError(f"task {task.index}: {_last_line(err)}") from None
            finish(task, result)
            submit(actor)
    finally:
        for actor in actors:
            ray.kill(actor, no_restart=True)
        if started:
            ray.shutdown()
