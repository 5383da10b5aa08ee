"""The model interface every domain passes through, and safetensors load/save with config checks.

A masked model maps token ids ``(B, N)`` to logits over ``V`` values and hidden states. Values are the
symbols a position can take (9 digits, 20 amino acids); ``value_tokens[v]`` is the token id that writes
value ``v`` into a sequence and ``mask_id`` the id of a masked position. Probes, estimators and decoders
only use this interface.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import torch
from safetensors.torch import load_file, save_file


@dataclass
class MDMOutput:
    """``logits``: ``(B, N, V)`` float32 over values; ``hidden``: ``(B, N, D)`` final hidden states."""

    logits: torch.Tensor
    hidden: torch.Tensor


@runtime_checkable
class MaskedModel(Protocol):
    mask_id: int
    value_tokens: torch.Tensor  # (V,) token id of each value

    def __call__(self, tokens: torch.Tensor) -> MDMOutput: ...


class ModelFileError(ValueError):
    """A weights or config file that is missing, unreadable or does not fit the model."""


def save_model(model: torch.nn.Module, config, path: str | Path, extra: dict | None = None) -> None:
    """Write ``path`` (safetensors) and ``path`` with suffix ``.json`` (the frozen config + ``extra``)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(path), metadata={"config": json.dumps(asdict(config))})
    meta = {"config": asdict(config), **(extra or {})}
    path.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")


def load_config_dict(path: str | Path) -> dict:
    """The config stored beside the weights at ``path``."""
    path = Path(path)
    meta_path = path.with_suffix(".json")
    if not path.is_file():
        raise ModelFileError(f"weights file not found: {path}")
    if not meta_path.is_file():
        raise ModelFileError(f"config file not found beside the weights: {meta_path}")
    try:
        return json.loads(meta_path.read_text())["config"]
    except (json.JSONDecodeError, KeyError) as err:
        raise ModelFileError(f"{meta_path} is not a valid model config: {err}") from None


def load_state(model: torch.nn.Module, path: str | Path, device: torch.device) -> torch.nn.Module:
    """Load safetensors weights into ``model`` (strict), move it to ``device`` and set eval mode."""
    try:
        state = load_file(str(path))
    except Exception as err:  # safetensors raises its own error types
        raise ModelFileError(f"cannot read weights {path}: {err}") from None
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise ModelFileError(f"weights {path} do not fit the config: {err}") from None
    return model.to(device).eval()
