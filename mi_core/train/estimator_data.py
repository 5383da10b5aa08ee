"""Exact-probe training data for the MI estimator, for any domain, written as resumable shards.

``python -m mi_core make-estimator-data DOMAIN --model PATH --out runs/estimator_data/NAME [options]``

The states come from the domain's state source (``Domain.states``, :class:`mi_core.domain.StateSource`). Each shard holds, per state, the tokens, the estimator's inputs from one MDM pass (hidden, probs, entropy,
masked) and the exact probe's MI, passes and seconds. Shard ``i`` depends only on ``(seed, i)``, so a run
resumes by skipping the shards on disk. Padded states (variable-length domains) carry a ``length`` tensor;
a padded position is never masked, so it takes part in no pair.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, fields, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from mi_core.device import pick_device
from mi_core.domain import DOMAINS, Domain, get_domain
from mi_core.io import atomic_write_bytes, atomic_write_json, check_output_dir, file_sha256, note_on_stop, run_lock
from mi_core.mi.estimator import mdm_features
from mi_core.mi.probe import per_length, probe_by_length
from mi_core.models.loading import load_model
from mi_core.options import Device, option
from mi_core.scale.engine import EngineConfig, Task, absolute, engine_from_args, run_tasks

MANIFEST = "manifest.json"
MANIFEST_KEYS = ("config", "model", "model_sha256")  # what train-estimator records of the data
SHARD_KEYS = ("tokens", "hidden", "probs", "entropy", "masked", "mi", "error_bound", "passes", "seconds",
              "source")


def shard_path(out: Path, index: int) -> Path:
    return out / f"shard_{index:05d}.safetensors"


def save_shard(shard: dict[str, torch.Tensor], path: Path) -> None:
    """Write atomically, so a killed run never leaves half a shard (nor, interrupted, its temporary file)."""
    atomic_write_bytes(path, safetensors.torch.save(shard))


def read_shard(path: Path) -> dict[str, torch.Tensor]:
    """One shard's tensors; ValueError naming the file when it cannot be read (a copy cut short, a disk error)."""
    try:
        return load_file(str(path))
    except Exception as err:  # safetensors raises its own error types
        raise ValueError(f"{path} is damaged ({err}); make-estimator-data with the same --out and settings "
                         "writes it again") from None


def readable(path: Path) -> bool:
    try:
        read_shard(path)
    except ValueError:
        return False
    return True


def read_manifest(path: Path) -> dict:
    """The manifest of a folder of estimator data (a ValueError naming the file when it is not one)."""
    try:
        manifest = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not valid JSON ({err}): not the manifest of estimator data") from None
    if not isinstance(manifest, dict) or "config" not in manifest:
        raise ValueError(f"{path} is not the manifest of estimator data (make-estimator-data writes one): use "
                         "another --out or --data folder")
    missing = [key for key in MANIFEST_KEYS if key not in manifest]
    if missing or not isinstance(manifest["config"], dict):
        problem = f"it has no {', '.join(missing)}" if missing else "its config is not an object"
        raise ValueError(f"{path} is not the manifest of estimator data: {problem} (the model its shards were "
                         "probed on is recorded there); make-estimator-data into a new --out writes one")
    return manifest


def check_shard(path: Path, shard: dict[str, torch.Tensor], first: tuple[Path, dict] | None = None) -> None:
    """ValueError naming ``path`` when ``shard`` lacks a tensor, its tensors disagree on the states or positions
    they hold, or (``first``: another shard of the folder and its path) its tensors' per-state shapes or dtypes
    differ from that shard's: shards of another model, domain or width, which could not be trained on together."""
    missing = [key for key in SHARD_KEYS if key not in shard]
    if missing:
        raise ValueError(f"{path} is not a shard of estimator data: it has no {', '.join(missing)}")
    s, n = shard["tokens"].shape[:2] if shard["tokens"].dim() == 2 else (None, None)
    want = {"hidden": (s, n), "probs": (s, n), "entropy": (s, n), "masked": (s, n), "mi": (s, n, n)}
    bad = [key for key, lead in want.items() if s is None or tuple(shard[key].shape[:len(lead)]) != lead
           or shard[key].dim() != {"hidden": 3, "probs": 3, "mi": 3}.get(key, 2)]
    bad += [key for key, value in shard.items() if value.dim() == 0 or len(value) != s]
    if bad:
        raise ValueError(f"{path} is damaged: its {', '.join(sorted(set(bad)))} do not fit its tokens "
                         f"{tuple(shard['tokens'].shape)}; make-estimator-data with the same --out and settings "
                         "writes it again once it is removed")
    if first is None:
        return
    other_path, other = first
    if set(shard) != set(other):
        odd = ", ".join(sorted(set(shard) ^ set(other)))
        raise ValueError(f"{path} does not fit {other_path.name}: one of them holds {odd} and the other does not "
                         "(shards of another domain?); keep one make-estimator-data run's shards in a folder")
    for key, value in shard.items():
        if value.shape[1:] != other[key].shape[1:] or value.dtype != other[key].dtype:
            raise ValueError(f"{path} does not fit {other_path.name}: its {key} is {tuple(value.shape[1:])} a state, "
                             f"there {tuple(other[key].shape[1:])} (shards of another model or settings?); keep one "
                             "make-estimator-data run's shards in a folder")


def load_shards(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """All shards under ``path`` concatenated (``masked`` as bool), and the manifest with a ``summary``."""
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise FileNotFoundError(f"no estimator data at {path} (missing {MANIFEST})")
    manifest = read_manifest(path / MANIFEST)
    files = sorted(path.glob("shard_*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no shards under {path}")
    parts = [read_shard(f) for f in files]
    for f, part in zip(files, parts):
        check_shard(f, part, None if f == files[0] else (files[0], parts[0]))
    data = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    data["masked"] = data["masked"].bool()
    sources = manifest.get("sources") or [str(i) for i in range(int(data["source"].max()) + 1)]
    manifest["summary"] = summarise(data, sources)
    return data, manifest


def summarise(data: dict[str, torch.Tensor], sources) -> dict:
    """Counts and cost of a data set: states per source, masked cells, probe passes and seconds."""
    counts = torch.bincount(data["source"], minlength=len(sources)).tolist()
    summary = {"states": len(data["tokens"]), "by_source": dict(zip(sources, counts)),
               "mean_masked": float(data["masked"].float().sum(1).mean()), "passes": int(data["passes"].sum()),
               "probe_seconds": round(float(data["seconds"].sum()), 1),
               "max_error_bound": float(data["error_bound"].max())}
    if "length" in data:
        summary["mean_length"] = float(data["length"].float().mean())
    return summary


SPEED_ONLY = ("max_batch",)  # config fields a resumed run may change: they set how fast, not what, it probes


def settled(value):
    """A manifest entry as a resumed run compares it: a config without its :data:`SPEED_ONLY` fields."""
    return {k: v for k, v in value.items() if k not in SPEED_ONLY} if isinstance(value, dict) else value


def grows(old: dict, new: dict) -> bool:
    """``new`` asks for more states than ``old`` with every other setting and the model alike: the shards on disk
    are the new run's first ones, since shard ``i`` is drawn with seed ``(seed, i)`` whatever the total."""
    before, after = settled(old.get("config")), settled(new["config"])
    return (old.get("model_sha256") == new["model_sha256"] and isinstance(before, dict)
            and isinstance(before.get("states"), int) and {**before, "states": after["states"]} == after
            and after["states"] > before["states"])


def difference(old: dict, new: dict) -> str:
    """What differs between the manifest ``old`` and the run ``new`` asks for: the options, or the model."""
    if old.get("model_sha256") != new["model_sha256"]:
        return f"another model (sha256 {str(old.get('model_sha256'))[:12]}, this one {str(new['model_sha256'])[:12]})"
    before, after = settled(old.get("config")) or {}, settled(new["config"])
    keys = [k for k in after if before.get(k) != after[k]] or ["config"]
    return "other settings: " + ", ".join(f"--{k.replace('_', '-')} {before.get(k)} there, {after.get(k)} asked"
                                          for k in keys)


def set_aside_last(out: Path, old_config: dict, log) -> None:
    """Before a run grows: the old run's last shard, when it held fewer than ``shard_size`` states, kept beside as
    ``.partial`` (the grown run writes it whole)."""
    states, size = old_config["states"], old_config["shard_size"]
    path = shard_path(out, -(-states // size) - 1)
    if states % size and path.is_file():
        path.replace(path.with_suffix(".partial"))
        log(f"{path} held {states % size} of its {size} states (kept as {path.with_suffix('.partial').name}): it "
            "is written again whole")


def write_manifest(out: Path, cfg, model_path: Path, model, command: str,
                   sources: tuple[str, ...], domain: str, log=print) -> dict:
    """Create ``out/manifest.json``, or check that the one there has the same config and model (ValueError) or the
    same with more ``states`` (the run grows); a manifest with no shard beside it (a run stopped before its first)
    is replaced, and shards with no manifest are refused."""
    manifest = {"config": json.loads(json.dumps(asdict(cfg))), "sources": list(sources), "domain": domain,
                "command": command,
                "model": None if model_path is None else str(model_path),
                "model_sha256": None if model_path is None else file_sha256(model_path),
                "model_config": asdict(model.cfg) if hasattr(model, "cfg") else None}
    path = out / MANIFEST
    shards = sorted(Path(out).glob("shard_*.safetensors"))
    if path.is_file():
        old = read_manifest(path)
        if isinstance(old.get("config", {}).get("mix"), dict):  # written before the mix was three weights
            old["config"]["mix"] = list(old["config"]["mix"].values())
        differ = [key for key in ("config", "model_sha256") if settled(old.get(key)) != settled(manifest[key])]
        if not differ:
            return old
        if shards and grows(old, manifest):
            log(f"{out}: growing from {old['config']['states']} to {cfg.states} states")
            set_aside_last(out, old["config"], log)
        elif shards:
            raise ValueError(f"{out} holds shards of {difference(old, manifest)}; use a new --out, the same "
                             "settings or more --states")
        # else a run stopped before its first shard (a bad file, an interrupt): nothing to keep, the new settings win
    elif shards:  # shards no manifest describes: of an unknown model and settings, they would pass for this run's
        raise ValueError(f"{out} holds {len(shards)} shards but no {MANIFEST}, so nothing says which model and settings "
                         "probed them; use a new --out, or move them away")
    atomic_write_json(path, manifest)
    return manifest


def source_for(cfg) -> tuple[Domain, object]:
    for domain in DOMAINS.values():
        if domain.states is not None and isinstance(cfg, domain.part("states").config_cls):
            return domain, domain.part("states")(cfg)
    raise ValueError(f"no registered domain draws estimator states from a {type(cfg).__name__}")


def pad_state(row: dict[str, torch.Tensor], width: int, pad_id: int) -> dict[str, torch.Tensor]:
    """One state's tensors (leading axes of length N) padded to ``width``."""
    n = row["tokens"].shape[0]
    extra = width - n
    return row | {"tokens": F.pad(row["tokens"], (0, extra), value=pad_id),
                  "masked": F.pad(row["masked"], (0, extra), value=False), "entropy": F.pad(row["entropy"], (0, extra)),
                  "hidden": F.pad(row["hidden"], (0, 0, 0, extra)), "probs": F.pad(row["probs"], (0, 0, 0, extra)),
                  "mi": F.pad(row["mi"], (0, extra, 0, extra)), "length": torch.tensor(n)}


def state_rows(model, tokens: list[torch.Tensor], eps: float, max_batch: int) -> list[dict[str, torch.Tensor]]:
    """Per state: one MDM pass's features and the exact probe, both run once per distinct length."""
    probed = probe_by_length(model, tokens, eps=eps, max_batch=max_batch)
    features = per_length(tokens, lambda stack: zip(*(x.detach().cpu() for x in mdm_features(model, stack))))
    return [{"tokens": t.cpu(), **dict(zip(("hidden", "probs", "entropy", "masked"), f)), "mi": r.mi.float(),
             "error_bound": r.error_bound.max().float(), "passes": torch.tensor(r.passes),
             "seconds": torch.tensor(r.seconds)} for t, f, r in zip(tokens, features, probed)]


def shard_pad_id(domain: Domain) -> int | None:
    """The token a shard's states are padded with to their source's ``width``, or None: a fixed-length domain's
    states all have its length, and padding would mark its data variable-length (no position embeddings)."""
    return None if domain.length is not None else domain.pad_id or 0


def make_shard(model, source, index: int, device, pad_id: int | None = 0) -> dict[str, torch.Tensor]:
    """Shard ``index`` of ``source``: its states (seeded by ``(cfg.seed, index)``), features and exact MI, padded
    to the source's ``width`` with ``pad_id`` (None: not padded)."""
    cfg = source.cfg
    rng = np.random.default_rng([cfg.seed, index])
    count = min(cfg.shard_size, cfg.states - index * cfg.shard_size)
    drawn, kinds = source.draw(model, rng, count, device)
    tokens = [torch.as_tensor(np.asarray(t, dtype=np.int64), device=device) for t in drawn]
    rows = state_rows(model, tokens, cfg.eps, cfg.max_batch)
    for row, kind in zip(rows, kinds):
        row["source"] = torch.tensor(int(kind))
    if source.width is not None and pad_id is not None:
        rows = [pad_state(r, source.width, pad_id) for r in rows]
    return {k: torch.stack([r[k] for r in rows]).contiguous() for k in rows[0]}


@dataclass(frozen=True)
class ShardMaker:
    """Picklable worker factory for the task engine: loads the model and the state source once per process;
    returns ``index -> shard``."""

    domain: str
    cfg: Any
    model: str | None
    device: str = "auto"

    def __call__(self):
        device = pick_device(self.device)
        domain = get_domain(self.domain)
        model = load_model(self.model, device, domain=self.domain)
        return partial(make_shard, model, domain.part("states")(self.cfg), device=device, pad_id=shard_pad_id(domain))


def for_workers(cfg):
    """``cfg`` as a worker process reads it: each field naming a file here (``--fasta``, ``--csv``) made absolute,
    since a Ray actor starts in its cluster's working directory, not in this process's."""
    named = {}
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if isinstance(value, (str, Path)) and absolute(value) != str(value) and Path(value).is_file():
            named[f.name] = type(value)(absolute(value))
    return replace(cfg, **named) if named else cfg


def write_shards(maker: ShardMaker, local_worker, shards: int, out: Path, engine: EngineConfig | None):
    """Write every missing shard under ``out`` (atomically, by this process), one engine task per shard;
    the engine's ``RunReport``."""
    Path(out).mkdir(parents=True, exist_ok=True)
    tasks = [Task(i, i, shard_path(out, i)) for i in range(shards)]
    return run_tasks(tasks, maker, engine, save=lambda task, shard: save_shard(shard, task.path),
                     local_worker=local_worker, desc="probe shards", unit="shard")


def run(model, model_path: Path, cfg, out: Path, device, log=print, engine=None) -> dict:
    """Write every missing shard of ``cfg`` (a domain's state config) under ``out``; return the summary."""
    domain, source = source_for(cfg)
    source.check(model)
    model_flag = "" if model_path is None else f"--model {model_path} "
    command = f"python -m mi_core make-estimator-data {domain.cli_name} {model_flag}--out {out} {source.options()}"
    write_manifest(out, cfg, model_path, model, command, source.sources, domain.cli_name, log)
    for path in (shard_path(out, i) for i in range(cfg.shards)):
        if path.is_file() and not readable(path):  # kept beside, out of the data's way, and written again
            path.replace(path.with_suffix(".damaged"))
            log(f"{path} was damaged (kept as {path.with_suffix('.damaged').name}): it is written again")
    todo = [i for i in range(cfg.shards) if not shard_path(out, i).is_file()]
    log(f"{out}: {cfg.shards - len(todo)} of {cfg.shards} shards already written")
    note_on_stop(f"{out} keeps the shards written: the same command again continues")
    if todo:
        gpus = engine is not None and engine.num_gpus > 0  # a Ray actor with GPUs works on CUDA, one without
        worker_device = "cuda" if gpus else "cpu"  # sees none (Ray empties its CUDA_VISIBLE_DEVICES)
        maker = ShardMaker(domain.key, for_workers(cfg), absolute(model_path), device=worker_device)  # as actors open them
        local = partial(make_shard, model, source, device=device, pad_id=shard_pad_id(domain))
        write_shards(maker, local, cfg.shards, out, engine)
    return load_shards(out)[1]["summary"]


@dataclass
class DataRun:
    model: Path | None = option(None, "the frozen MDM whose MI is learned", default_for=lambda d: d.default_file("model"))
    out: Path = option(None, "shard directory (outside the repository's tracked files)", required=True)


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = "has no state source (a Domain's states)"


def serves(domain: Domain) -> bool:
    return domain.states is not None


def options(domain: Domain) -> list:
    return [DataRun, domain.part("states").data_options, Device, EngineConfig]


def config_from_args(args):
    return get_domain(args.domain).part("states").config_from_args(args)


def main(args) -> int:
    check_output_dir(args.out)
    engine = engine_from_args(args)
    cfg = config_from_args(args)
    device = pick_device(args.device, args.threads)
    model = load_model(None if args.model is None else str(args.model), device, domain=args.domain)
    start = time.time()
    with run_lock(args.out, lock=Path(args.out) / "make-estimator-data.lock"):  # a second run into it stops here
        summary = run(model, model.weights_path, cfg, args.out, device,
                      log=lambda m: print(m, file=sys.stderr, flush=True), engine=engine)
    summary["wall_seconds_this_run"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=2))
    return 0
