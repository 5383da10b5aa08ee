"""Estimator data on disk: shards written atomically, the manifest that pins a run's config and model."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from mi_core.io import file_sha256

MANIFEST = "manifest.json"


def shard_path(out: Path, index: int) -> Path:
    return out / f"shard_{index:05d}.safetensors"


def save_shard(shard: dict[str, torch.Tensor], path: Path) -> None:
    """Write atomically, so a killed run never leaves half a shard."""
    tmp = path.with_suffix(".tmp")
    save_file(shard, str(tmp))
    tmp.replace(path)


def load_shards(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """All shards under ``path`` concatenated (``masked`` as bool), and the manifest with a ``summary``."""
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise FileNotFoundError(f"no estimator data at {path} (missing {MANIFEST})")
    files = sorted(path.glob("shard_*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no shards under {path}")
    parts = [load_file(str(f)) for f in files]
    data = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    data["masked"] = data["masked"].bool()
    manifest = json.loads((path / MANIFEST).read_text())
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


def write_manifest(out: Path, cfg, model_path: Path, model, command: str,
                   sources: tuple[str, ...], domain: str) -> dict:
    """Create ``out/manifest.json``, or check that the one there has the same config and model (ValueError)."""
    manifest = {"config": json.loads(json.dumps(asdict(cfg))), "sources": list(sources), "domain": domain,
                "command": command,
                "model": None if model_path is None else str(model_path),
                "model_sha256": None if model_path is None else file_sha256(model_path),
                "model_config": asdict(model.cfg) if hasattr(model, "cfg") else None}
    path = out / MANIFEST
    if path.is_file():
        old = json.loads(path.read_text())
        for key in ("config", "model_sha256"):
            if old.get(key) != manifest[key]:
                raise ValueError(f"{out} holds shards of a different {key.replace('_', ' ')}; use a new --out "
                                 f"or the same settings (found {old.get(key)}, asked for {manifest[key]})")
        return old
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
