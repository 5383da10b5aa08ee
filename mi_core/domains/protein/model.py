"""Which protein model, for the command line and the app: ESM-C's weights never ship, the protein MDM
always does, so ``auto`` takes ESM-C when its weights are on this machine, else the MDM with the reason.

Specs: ``auto``; ``esmc``; ``mdm`` (the shipped MDM, or the ``.safetensors`` named by ``MI_LENS_PROTEIN_MODEL``);
or a path: a ``.safetensors`` protein MDM, a ``.pth`` ESM-C checkpoint, or a directory holding one.
``MI_LENS_PROTEIN_MODEL`` set to any other spec than ``auto`` is what ``auto`` loads, as in the app."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

import torch

from mi_core.domain import env_file
from mi_core.domains.protein.esmc import WEIGHTS_ENV, find_esmc_weights, load_esmc, where_searched
from mi_core.domains.protein.mdm import load_protein_mdm
from mi_core.io import ROOT
from mi_core.models.base import ModelFileError, load_meta

DEFAULT_MDM = ROOT / "assets" / "protein_mdm.safetensors"
MDM_ENV = "MI_LENS_PROTEIN_MODEL"


@dataclass(frozen=True)
class ProteinModelInfo:
    """What :func:`load_protein_model` loaded; ``fallback_reason`` when ``auto`` wanted ESM-C but took the MDM."""

    kind: str
    path: Path
    description: str
    fallback_reason: str | None = None
    esmc_skipped: str | None = None  # why ``auto`` did not load ESM-C


def default_mdm_path() -> Path:
    """``MI_LENS_PROTEIN_MODEL`` when it names a ``.safetensors`` file, else the shipped MDM."""
    env = env_file(MDM_ENV) or ""  # a relative path from the working folder, as every model variable
    return Path(env) if env.endswith(".safetensors") else DEFAULT_MDM


def load_protein_model(spec: str = "auto", device: torch.device | str = "cpu") -> tuple[torch.nn.Module, ProteinModelInfo]:
    """``(model in eval mode, info)`` for a spec; ModelFileError for missing or bad weights."""
    spec = (spec or "auto").strip()
    chosen = os.environ.get(MDM_ENV, "").strip()
    if spec == "auto" and chosen not in ("", "auto"):
        try:  # the variable names a model (esmc, mdm, a file): auto takes it, as the app does
            return load_protein_model(chosen, device)
        except ValueError as err:
            raise ModelFileError(f"{err} (the value of {MDM_ENV})") from None
    if spec == "auto":
        try:
            weights = find_esmc_weights()
            if weights is not None:
                return load_esmc_model(weights, device)
            skipped = reason = f"no ESM-C weights found in {where_searched()}"
        except (ModelFileError, ImportError) as err:  # ImportError: weights found but the esm package is missing
            skipped, reason = str(err), f"ESM-C not used: {err}"
        model, info = load_mdm(default_mdm_path(), device)
        return model, replace(info, fallback_reason=f"{reason}; using the {info.description}", esmc_skipped=skipped)
    if spec == "esmc":
        weights = find_esmc_weights()
        if weights is None:
            raise ModelFileError(f"no ESM-C weights found in {where_searched()}: set {WEIGHTS_ENV} to an "
                                 "esmc_300m_2024_12_v0.pth (or esmc_600m) file, or pass its path as the model")
        return load_esmc_model(weights, device)
    if spec == "mdm":
        return load_mdm(default_mdm_path(), device)
    path = Path(spec).expanduser()
    if path.suffix == ".safetensors":
        return load_mdm(path, device)
    if path.suffix in (".pth", ".pt") or path.is_dir():
        return load_esmc_model(find_esmc_weights(path), device)
    raise ValueError(f"unknown protein model {spec!r}: use auto, esmc, mdm, a protein MDM .safetensors, "
                     "or an ESM-C .pth file (or a directory holding data/weights/esmc_*.pth)")


def load_esmc_model(path: Path, device) -> tuple[torch.nn.Module, ProteinModelInfo]:
    model = load_esmc(path, device)
    return model, ProteinModelInfo("esmc", path, f"{model.name} ({path.name}), max {model.max_len} residues")


def load_mdm(path: Path, device) -> tuple[torch.nn.Module, ProteinModelInfo]:
    if not path.is_file():
        raise ModelFileError(f"protein MDM not found: {path} (set {MDM_ENV} to a protein MDM .safetensors, "
                             "or train one: python -m mi_core train protein --fasta ...)")
    model = load_protein_mdm(path, device)
    cfg = model.cfg
    try:
        fasta = load_meta(path).get("data", {}).get("fasta")
    except (ValueError, AttributeError):
        fasta = None
    trained = " trained on CATH S40" if fasta and "S40" in fasta else (f" trained on {fasta}" if fasta else "")
    return model, ProteinModelInfo("mdm", path, f"protein MDM{trained} ({cfg.d_model}-dim, {cfg.n_layers} layers, "
                                                f"max {cfg.max_len} residues; {path.name})")
