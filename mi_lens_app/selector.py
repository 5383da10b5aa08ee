"""The learned-order selector in the app (no streamlit): which domains can run ``learned``, and why not.

A selector (``mi_core.decoding.selector``) reads the hidden states of the MDM it was trained against, so it
serves only a domain whose model has the hidden size it records; a strategy that takes one (a ``selector``
path and a runtime ``net``) is offered only where the domain's selector loads and fits its model.
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import torch

from mi_core.decoding import STRATEGIES
from mi_core.decoding.selector import PositionNet, load_order_net
from mi_core.io import file_sha256
from mi_core.models.base import load_meta, trained_on_mismatch, trained_shas
from mi_lens_app.domains import DOMAINS, ROOT, Domain


def uses_selector(name: str) -> bool:
    """Whether strategy ``name`` runs an order selector (it has ``selector`` and ``net`` fields)."""
    return {"selector", "net"} <= {f.name for f in fields(STRATEGIES[name])}


def load_domain_selector(domain: Domain, device: torch.device) -> PositionNet | None:
    """The domain's order selector, or None when it has none or its file is absent (raises ModelFileError
    on a file that is not a selector)."""
    path = domain.selector_path()
    if path is None or not path.is_file():
        return None
    return load_order_net(path, device, role="selector")


def hidden_size(model, domain: Domain) -> int:
    """The size of the model's hidden states (the model interface's ``hidden_size``)."""
    return int(model.hidden_size)


def selector_mismatch(model, net: PositionNet, domain: Domain) -> str | None:
    """Why ``net`` (the domain's selector) cannot read ``model``'s hidden states, or None when it fits."""
    size = hidden_size(model, domain)
    if net.cfg.d_model != size:
        return (f"it reads hidden states of size {net.cfg.d_model} (those of the MDM it was trained against), "
                f"but the model's are {size}")
    problem = trained_on_mismatch(model, domain.selector_path())
    return f"it {problem}" if problem else None


def trained_against(path: Path) -> Path | None:
    """The denoiser a selector's config says it was trained against (None: not recorded)."""
    try:
        recorded = json.loads(path.with_suffix(".json").read_text()).get("denoiser")
    except (OSError, ValueError):
        return None
    if not isinstance(recorded, str):
        return None
    p = Path(recorded)
    return p if p.is_absolute() else ROOT / p


def other_denoiser_note(domain: Domain) -> str | None:
    """A caution when the selector was trained against another model file of the same hidden size, or None."""
    path, model_path = domain.selector_path(), domain.model_path()
    if path is None or model_path is None:
        return None
    recorded = trained_against(path)
    if recorded is None or recorded.resolve() == model_path.resolve():
        return None
    return (f"The order selector `{path.name}` was trained against `{recorded.name}`; this page's model is "
            f"`{model_path.name}`. It reads hidden states of the same size, but what they mean may differ.")


def misfit(domain: Domain, path: Path, problem: str) -> str:
    """Why the selector at ``path`` is not used on ``domain``'s model (``problem``: a
    :func:`selector_mismatch` reason), and which model file it would run on, when its config records one."""
    note = f"{path.name} does not fit the model: {problem}"
    recorded = trained_against(path)
    if recorded is None or not recorded.is_file() or domain.model_env is None:
        return note
    shas = trained_shas(load_meta(path))
    if shas and file_sha256(recorded) not in shas:  # the file at that path has changed since
        return note
    shown = recorded.relative_to(ROOT) if recorded.is_relative_to(ROOT) else recorded
    return f"{note}; set {domain.model_env} to `{shown}` to run `learned`"


def no_selector_reason(domain: Domain, problem: str | None) -> str:
    """The note shown where ``learned`` is not offered: the domain has no selector, or ``problem``."""
    if domain.selector_path() is None:
        served = " and ".join(d.label.split(" (")[0] for d in DOMAINS.values() if d.selector_default is not None)
        return (f"`learned` is not offered for {domain.label}: no order selector is trained for it (a selector "
                f"reads a trained MDM's hidden states; the shipped ones serve {served}).")
    return f"`learned` is not offered: the order selector cannot be used ({problem})."


def attach_selector(strategy, net: PositionNet | None) -> None:
    """Give a selector-running strategy the domain's selector when it was given none itself."""
    if net is None or not hasattr(strategy, "net") or strategy.net is not None or strategy.selector is not None:
        return
    strategy.net = net
