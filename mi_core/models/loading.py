"""One loader for every model of every domain: :func:`load_model` takes a weights path, a keyword, or
nothing (the domain's default), and returns a :class:`~mi_core.models.base.MaskedLM`.

Each registered domain names its loader (``Domain.model_loader``, a ``"module:function"`` reference
resolved here); a loader is ``(spec, device) -> (model, description)``. The three below serve the shipped
domains; a new domain's module brings its own.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mi_core.domains.base import Domain, is_keyword, resolve_path
from mi_core.domains.registry import get_domain
from mi_core.models.base import MaskedLM, ModelFileError, load_config_dict


def load_sudoku(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    if not spec:
        raise ValueError("a Sudoku MDM needs a weights file (.safetensors)")
    path = Path(spec)
    model = load_sudoku_mdm(path, device)
    layers = model.cfg.n_layers * model.cfg.loops
    return model, f"Sudoku MDM ({layers} layers, d_model {model.hidden_size}; {path.name})"


def load_oracle4(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    from mi_core.models.oracle4 import Oracle4Model

    if spec not in (None, "", "oracle4", "builtin"):
        raise ValueError(f"the 4x4 oracle is built in and takes no weights file, got {spec!r}")
    return Oracle4Model().to(device).eval(), "the exact 4x4 Sudoku oracle (built in)"


def load_protein(spec: str | Path | None, device) -> tuple[MaskedLM, str]:
    """``auto`` (ESM-C when its weights are here, else the shipped MDM), ``esmc``, ``mdm`` or a path; the
    description says why ``auto`` fell back."""
    from mi_core.models.protein import load_protein_model

    model, info = load_protein_model(str(spec or "auto"), device)
    model.weights_path = info.path
    return model, info.fallback_reason or info.description


def domain_of_file(path: Path) -> Domain:
    """The domain a weights file belongs to, read from the config beside it."""
    raw = load_config_dict(path)
    if "box" in raw:
        return get_domain("sudoku9")
    if "max_len" in raw:
        return get_domain("protein")
    raise ModelFileError(f"{path}: cannot tell which domain this model belongs to; name the domain")


def load_model_described(spec: str | Path | None = None, device: torch.device | str = "cpu",
                         domain: str | Domain | None = None) -> tuple[MaskedLM, str]:
    """``(model, a line naming it)``: see :func:`load_model`."""
    if isinstance(domain, str):
        domain = get_domain(domain)
    if domain is None:
        if spec is None:
            raise ValueError("load_model needs a weights path, a domain name, or a domain")
        path = Path(spec)
        if path.suffix == ".safetensors":
            domain = domain_of_file(path)
        else:
            try:
                domain, spec = get_domain(str(spec)), None
            except ValueError:
                domain = get_domain("protein")  # its keywords: auto, esmc, mdm, or an ESM-C checkpoint
    if spec is None:  # the domain's default (or its environment variable's), read against the repository
        spec = domain.model_spec()
        if spec and not is_keyword(spec):
            spec = str(resolve_path(spec))
    return domain.part("model_loader")(spec, torch.device(device))


def load_model(spec: str | Path | None = None, device: torch.device | str = "cpu",
               domain: str | Domain | None = None) -> MaskedLM:
    """Any model of any domain, in eval mode on ``device``.

    ``spec``: a weights path (its domain read from the config beside it), a domain name (its default
    model), a protein keyword (``auto``, ``esmc``, ``mdm``), or None with ``domain`` (that domain's model
    from its environment variable or default).

    Raises:
        ModelFileError: a missing or unreadable file, or one that does not fit its config;
        ValueError: a spec that names nothing loadable.
    """
    return load_model_described(spec, device, domain)[0]
