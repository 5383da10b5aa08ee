"""One loader for every model of every domain, through each domain's ``model_loader``."""

from __future__ import annotations

from pathlib import Path

import torch

from mi_core.device import pick_device
from mi_core.domain import DOMAINS, Domain, cli_names, env_file, get_domain, is_keyword, resolve_path
from mi_core.models.base import MaskedLM, ModelFileError, load_meta


def domain_of_file(path: Path) -> Domain:
    """The domain recorded in the JSON beside a weights file (ModelFileError when there is none)."""
    key = load_meta(path).get("domain")
    if not isinstance(key, str):
        raise ModelFileError(f"{path} records no domain; name the domain (e.g. the command's DOMAIN argument)")
    try:
        return get_domain(key)
    except ValueError as err:
        raise ModelFileError(f"{path}: {err}") from None


def other_domain(path: str | Path, domain: str | Domain | None) -> Domain | None:
    """The domain recorded beside the trained file ``path`` when it is a known one other than ``domain``; None when
    they agree or either is unknown (a file from an older version records none)."""
    try:
        trained, ours = get_domain(load_meta(path).get("domain")), get_domain(getattr(domain, "key", domain))
    except ValueError:
        return None
    return trained if trained.key != ours.key else None


def unregistered_domain(path: str | Path, domain: Domain) -> str | None:
    """The domain key recorded beside ``path`` when no registered domain has it (the plugin that brings it is not
    loaded): another domain's weights that ``domain``'s loader might read, as with the same vocabulary size."""
    try:
        key = load_meta(path).get("domain")
    except ValueError:
        return None
    if not isinstance(key, str) or key == domain.key or key in domain.names:
        return None
    try:
        get_domain(key)
    except ValueError:
        return key
    return None


def keyword_domain(spec: str) -> tuple[Domain, str | None]:
    """``(domain, spec)`` of a spec that is not a ``.safetensors`` file: a domain name (spec None), a
    keyword in ``Domain.model_keywords``, else the domain with ``foreign_weights``."""
    try:
        return get_domain(spec), None
    except ValueError:
        pass
    for domain in DOMAINS.values():
        if spec in domain.model_keywords:
            return domain, spec
    for domain in DOMAINS.values():
        if domain.foreign_weights:
            return domain, spec
    raise ValueError(f"cannot tell which model {spec!r} names: give a weights file (.safetensors), a domain "
                     f"({', '.join(cli_names())}) or a keyword ({', '.join(k for d in DOMAINS.values() for k in d.model_keywords)})")


def check_domain_of(spec, domain: Domain) -> None:
    """ModelFileError when the weights ``spec`` names record another domain than ``domain`` (or one not registered
    here): a loader of the same config class would read them, and serve the wrong alphabet."""
    if spec is None or not str(spec).endswith(".safetensors"):
        return
    trained = other_domain(spec, domain)
    if trained is not None:
        raise ModelFileError(f"{spec} is a model for {trained.cli_name} (its JSON records the domain {trained.key}), "
                             f"not for {domain.cli_name}")
    unknown = unregistered_domain(spec, domain)
    if unknown is not None:
        raise ModelFileError(f"{spec} is a model for the domain {unknown!r} (its JSON records it), not for "
                             f"{domain.cli_name}; no domain {unknown!r} is registered here (is its module named in "
                             "MI_LENS_DOMAINS?)")


def load_model_described(spec: str | Path | None = None, device: torch.device | str = "cpu",
                         domain: str | Domain | None = None) -> tuple[MaskedLM, str]:
    """``(model, a line naming it)``: see :func:`load_model`."""
    if isinstance(spec, Domain) and domain is None:  # load_model(get_domain("sudoku"))
        spec, domain = None, spec
    device = pick_device(str(device))  # ValueError on an unknown name, or CUDA where there is none
    if isinstance(domain, str):
        domain = get_domain(domain)
    if domain is None:
        if spec is None:
            raise ValueError("load_model needs a weights path, a domain name, or a domain")
        path = Path(spec)
        if path.suffix in (".safetensors", ".json"):  # a config names its weights beside it (load_meta)
            domain = domain_of_file(path)
        else:
            domain, spec = keyword_domain(str(spec))
    chosen = env_file(domain.model_env, domain.model_keys) or ""
    if chosen and spec is not None and str(spec) == domain.model_default and is_keyword(str(spec)):
        spec = None  # the default keyword (auto) takes the model the variable names, as the app does
    if spec is None:  # the variable's file (absolute: from the working folder), else the default in the checkout
        spec = domain.model_spec()
        if spec and not is_keyword(spec):
            spec = str(resolve_path(spec))
    try:
        check_domain_of(spec, domain)
        loaded = domain.part("model_loader")(spec, device)
    except (ValueError, OSError) as err:  # a file the environment named: say which variable to mend
        env = env_file(domain.model_env, domain.model_keys)
        if env and spec is not None and (env == str(spec) or Path(env) == Path(spec).absolute()):
            raise ModelFileError(f"{err} (the file ${domain.model_env} names)") from None
        raise
    if not (isinstance(loaded, tuple) and len(loaded) == 2 and isinstance(loaded[0], MaskedLM)):
        got = (f"({', '.join(type(x).__name__ for x in loaded)})" if isinstance(loaded, tuple)
               else type(loaded).__name__)  # (tuple, str): load_checked's (model, cfg) given as the model
        raise ValueError(f"the {domain.label} domain's model_loader returned {got}, not (model, description): a "
                         "MaskedLM and a line naming it (docs/architecture.md; load_checked returns (model, cfg))")
    model, description = loaded
    model.domain = domain.key
    return model, description


def load_model(spec: str | Path | None = None, device: torch.device | str = "cpu",
               domain: str | Domain | None = None) -> MaskedLM:
    """Any model of any domain, in eval mode on ``device`` (``cpu``, ``cuda``, ``auto``), from ``spec``: a weights
    path, a domain name or :class:`Domain`, a keyword (``auto``, ``esmc``), or None with ``domain`` (its default).
    Raises ModelFileError or ValueError."""
    return load_model_described(spec, device, domain)[0]
