"""One loader for every model of every domain: :func:`load_model` takes a weights path, a keyword, or
nothing (the domain's default), and returns a :class:`~mi_core.models.base.MaskedLM`.

Each registered domain brings its loader (``Domain.model_loader``), ``(spec, device) -> (model,
description)``. A weights file records its domain (``"domain"`` in the JSON beside it), so nothing guesses.
"""

from __future__ import annotations

from pathlib import Path

import torch

from mi_core.domain import DOMAINS, Domain, cli_names, get_domain, is_keyword, resolve_path
from mi_core.models.base import MaskedLM, ModelFileError, load_meta


def domain_of_file(path: Path) -> Domain:
    """The domain a weights file belongs to, as recorded in the JSON beside it (``"domain"``, written by
    :func:`mi_core.models.base.save_model`).

    Raises:
        ModelFileError: the file records no domain (name it: ``load_model(path, domain=KEY)``).
    """
    key = load_meta(path).get("domain")
    if not isinstance(key, str):
        raise ModelFileError(f"{path} records no domain; name the domain (e.g. the command's DOMAIN argument)")
    try:
        return get_domain(key)
    except ValueError as err:
        raise ModelFileError(f"{path}: {err}") from None


def keyword_domain(spec: str) -> tuple[Domain, str | None]:
    """``(domain, spec)`` of a spec that is not a ``.safetensors`` file: a domain name (its default model,
    spec None), a keyword one domain's loader accepts (``Domain.model_keywords``), else the domain that
    reads weights of other formats (``Domain.foreign_weights``).

    Raises:
        ValueError: no domain has this name or keyword.
    """
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
            domain, spec = keyword_domain(str(spec))
    if spec is None:  # the domain's default (or its environment variable's), read against the repository
        spec = domain.model_spec()
        if spec and not is_keyword(spec):
            spec = str(resolve_path(spec))
    model, description = domain.part("model_loader")(spec, torch.device(device))
    model.domain = domain.key
    return model, description


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
