"""The model interface every domain passes through, and safetensors load/save with config checks."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import typing
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors import safe_open
from safetensors.torch import load_file
from safetensors.torch import save as save_tensors

from mi_core.io import (
    cannot_write,
    commit,
    display_path,
    file_sha256,
    json_ready,
    missing_file,
    tmp_path,
    write_tmp_bytes,
)
from mi_core.options import DEFAULT_FLOAT, range_error, spec_of

MAX_CONFIG_INT = 2**20  # the bound of an integer config value whose field declares no range


@dataclass
class MDMOutput:
    """``logits``: ``(B, N, V)`` float32 over values; ``hidden``: ``(B, N, D)`` final hidden states."""

    logits: torch.Tensor
    hidden: torch.Tensor
    per_iteration: list[torch.Tensor] | None = None  # a recurrent model's logits per iteration, when asked for


class MaskedLM(torch.nn.Module):
    """The interface of every model: token ids ``(B, N)`` -> :class:`MDMOutput`.

    ``mask_id``: the token of a masked position; ``value_tokens``: ``(V,)`` buffer, the token of each value;
    ``seq_len``: the fixed length (None: it varies, up to ``max_len``); ``domain``: set by the loader.
    """

    mask_id: int = 0
    seq_len: int | None = None
    weights_path: Path | None = None  # the file it was loaded from (None: built in, or not from a file)
    domain: str | None = None  # the key of the domain it was loaded for (None: built by code)

    @property
    def max_len(self) -> int:
        if self.seq_len is None:
            raise NotImplementedError(f"{type(self).__name__} gives neither seq_len nor max_len")
        return self.seq_len

    @property
    def hidden_size(self) -> int:
        return int(self.cfg.d_model)

    @property
    def n_values(self) -> int:
        return int(self.value_tokens.numel())

    @property
    def device(self) -> torch.device:
        return self.value_tokens.device

    @property
    def dtype(self) -> torch.dtype:
        return next((p.dtype for p in self.parameters()), torch.float32)

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def check_length(self, n: int, name: str = "the model", unit: str = "positions", what: str = "the state") -> None:
        """Raise ValueError when ``what`` of ``n`` ``unit`` does not fit (a fixed ``seq_len``, or ``max_len``)."""
        if self.seq_len is not None and self.seq_len != n:
            raise ValueError(f"{what}: {n} {unit}, but {name} reads {self.seq_len}")
        if n > self.max_len:
            raise ValueError(f"{what}: {n} {unit}, longer than the {self.max_len} {name} takes")


class Wrapped(MaskedLM):
    """A model seen through another (fewer iterations, several views): the inner model's ids, length, domain,
    config, weights file, values and hidden size."""

    def __init__(self, model: MaskedLM):
        super().__init__()
        self.model = model
        self.mask_id, self.seq_len, self.domain = model.mask_id, model.seq_len, model.domain
        self.weights_path = model.weights_path
        self.cfg = getattr(model, "cfg", None)

    @property
    def value_tokens(self) -> torch.Tensor:
        return self.model.value_tokens

    @property
    def max_len(self) -> int:
        return self.seq_len if self.seq_len is not None else self.model.max_len

    @property
    def hidden_size(self) -> int:
        return self.model.hidden_size


def check_tokens(model, tokens, shape: str = "a (B, N) int64 tensor", error: type = ValueError) -> None:
    """Raise ``error`` unless ``tokens`` is ``shape`` (``(N,)`` when it starts "one state") of int64 ids on the
    device of ``model.value_tokens``, of a length a :class:`MaskedLM` reads, each its mask id or a value token."""
    if not (hasattr(model, "mask_id") and isinstance(getattr(model, "value_tokens", None), torch.Tensor)):
        raise error(f"model must be a masked model (load_model reads one), got a {type(model).__name__}")
    if not isinstance(tokens, torch.Tensor):
        raise error(f"tokens must be {shape}, got a {type(tokens).__name__}: torch.tensor(domain.parse_input(text)) "
                    "makes one")
    if tokens.dim() != (1 if shape.startswith("one state") else 2):
        raise error(f"tokens must be {shape}, got shape {tuple(tokens.shape)}")
    if tokens.dtype != torch.long:
        raise error(f"tokens must be int64 token ids, got {tokens.dtype}")
    if tokens.shape[-1] == 0:
        raise error("tokens hold no position")
    if tokens.device != model.value_tokens.device:
        raise error(f"tokens are on {tokens.device}, the model on {model.value_tokens.device}: tokens.to(model.device)")
    try:
        if isinstance(model, MaskedLM):
            model.check_length(tokens.shape[-1], what="tokens")
    except ValueError as err:
        raise error(str(err)) from None
    bad = (tokens != model.mask_id) & ~torch.isin(tokens, model.value_tokens)
    if bad.any():
        *row, pos = bad.nonzero()[0].tolist()
        where, ids = f"{f'state {row[0]}: ' if row else ''}the token at position {pos}", sorted(set(tokens[bad].tolist()))
        if ids == [getattr(model, "pad_id", None)]:
            raise error(f"{where} is the pad id {ids[0]}: a batch here holds states of one length, unpadded; give "
                        "states of different lengths one at a time (tokens[None])")
        raise error(f"{where} is neither the mask id nor a value token of this model (unknown ids {ids[:5]}): another "
                    "domain's?")


def masked_ce(logits: torch.Tensor, target_values: torch.Tensor, masked: torch.Tensor) -> torch.Tensor:
    """Mean cross-entropy of ``(B, N, V)`` logits over ``masked`` positions (no 1/t weighting); the targets are
    ``(B, N)`` value indices or ``(B, N, V)`` probabilities."""
    return F.cross_entropy(logits[masked].float(), target_values[masked])


class ModelFileError(ValueError):
    """A weights or config file that is missing, unreadable or does not fit the model."""


def save_model(model: torch.nn.Module, config, path: str | Path, extra: dict | None = None,
               domain: str | None = None) -> None:
    """Write ``path`` (safetensors) and ``path.json`` (config + ``extra``) atomically as a pair.

    Weights are renamed into place before the config; both carry one ``save_id``, so a kill between the two
    renames is finished by :func:`recover_pair`: the pair always loads as old-old or new-new.
    """
    path = Path(path)
    meta_path = path.with_suffix(".json")
    path.parent.mkdir(parents=True, exist_ok=True)
    save_id = uuid.uuid4().hex
    state = {k: v.detach().to("cpu").contiguous() for k, v in model.state_dict().items()}
    weights = save_tensors(state, metadata={"config": json.dumps(asdict(config)), "save_id": save_id})
    meta = {"config": asdict(config), **({"domain": domain} if domain else {}), **(extra or {}), "save_id": save_id}
    target, renaming = path, False
    try:
        weights_tmp = write_tmp_bytes(path, weights)
        target = meta_path
        meta_tmp = write_tmp_bytes(meta_path, (json.dumps(json_ready(meta), indent=2) + "\n").encode("utf-8"))
        target, renaming = path, True
        commit(weights_tmp, path)
    except BaseException as err:  # a full disk or read-only folder is one line naming the file; no temporary left,
        # but for the config's once the new weights are in place (stopped while their folder was flushed): the
        # loader completes the pair from it
        placed = renaming and not weights_tmp.exists()
        for tmp in (tmp_path(path), *(() if placed else (tmp_path(meta_path),))):
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            raise cannot_write(target, err) from None
        raise
    try:
        commit(meta_tmp, meta_path)
    except OSError as err:  # the new weights are in place: the loader completes the pair from the config's .tmp
        raise cannot_write(meta_path, err) from None


def recover_pair(path: str | Path) -> None:
    """Finish a :func:`save_model` interrupted between its renames: rename ``NAME.json.tmp`` into place when it
    carries the ``save_id`` of the weights at ``path``."""
    path = Path(path)
    meta_tmp = tmp_path(path.with_suffix(".json"))
    if not meta_tmp.is_file():
        return
    try:
        pending = json.loads(meta_tmp.read_text()).get("save_id")
        saved = read_header(path)[0].get("save_id")
    except Exception:  # noqa: BLE001  (a torn temp file or unreadable weights: nothing to finish)
        return
    if pending and pending == saved:
        with contextlib.suppress(OSError):
            os.replace(meta_tmp, path.with_suffix(".json"))


def read_json_object(path: Path, what: str) -> dict:
    """The JSON object in ``path``, ``what`` (e.g. ``"model config"``) naming it in a ModelFileError when the file
    cannot be read, is not JSON or holds another JSON value."""
    try:
        raw = json.loads(path.read_text())
    except OSError as err:  # unreadable (permissions), or gone since a caller's check
        raise ModelFileError(f"cannot read the config {path}: {err.strerror or err}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise ModelFileError(f"{path} is not a valid {what}: {err}") from None
    if not isinstance(raw, dict):
        raise ModelFileError(f"{path} is not a {what}: it holds a JSON {type(raw).__name__}, not an object")
    return raw


def _linked(path: Path, meta_path: Path) -> str:
    """For weights reached through a link: where the link leads and the config to link beside it, else ''."""
    if not path.is_symlink():
        return ""
    target = path.resolve()
    return f" ({path} is a link to {target}: link {target.with_suffix('.json')} as {meta_path} too)"


def load_meta(path: str | Path) -> dict:
    """The JSON stored beside the weights at ``path``, whose ``config`` is an object (ModelFileError when
    missing or unreadable)."""
    path = Path(path)
    meta_path = path.with_suffix(".json")
    if path.is_dir():
        raise ModelFileError(f"{path} is a directory, not a weights file (give a .safetensors file)")
    unsaved = ("its run stopped before its first validation, which writes the weights: add --resume to the run's "
               "command to go on to it (--eval-every)")  # a run writes its .ckpt between validations too
    if not path.is_file():
        ckpt = path.with_suffix(".ckpt")
        raise ModelFileError(missing_file(path, "weights file not found") + (
            f" ({ckpt} is there: {unsaved})" if path.suffix == ".safetensors" and ckpt.is_file() else ""))
    if path.suffix == ".json":
        raise ModelFileError(f"{path} is a config: give the weights file beside it, {path.with_suffix('.safetensors')}")
    if path.suffix == ".ckpt":  # a trainer's run state beside its weights, which read as garbled safetensors
        weights = path.with_suffix(".safetensors")
        raise ModelFileError(f"{path} is a training checkpoint (what --resume continues from), not weights: " + (
            f"give the weights file beside it, {weights}" if weights.is_file() else f"no weights beside it yet: {unsaved}"))
    recover_pair(path)
    if not meta_path.is_file() and path.suffix != ".safetensors":
        raise ModelFileError(f"{path} is not a weights file: give a .safetensors file (its .json beside it)")
    if not meta_path.is_file():
        raise ModelFileError(f"config file not found beside the weights: {meta_path}"
                             + (" (a directory has its name)" if meta_path.is_dir() else "") + _linked(path, meta_path))
    meta = read_json_object(meta_path, "model config")
    if "config" not in meta:
        raise ModelFileError(f"{meta_path} is not a model config: it has no 'config' entry")
    if not isinstance(meta["config"], dict):
        raise ModelFileError(f"{meta_path}: 'config' must be an object, got {type(meta['config']).__name__}")
    return meta


def build_config(config_cls, raw: dict, path: str | Path, what: str):
    """``config_cls(**raw)`` once each number is of its type and within its field's range (else
    :data:`MAX_CONFIG_INT`), so a config cannot make a loader allocate too much; ModelFileError names the field."""
    meta_path = Path(path).with_suffix(".json")
    hints = typing.get_type_hints(config_cls)
    declared = {f.name: spec_of(f).range for f in dataclasses.fields(config_cls)}
    for name, value in raw.items():
        kind = hints.get(name)
        if kind is int or kind is float:
            if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
                raise ModelFileError(f"{meta_path}: config {name} must be {'an integer' if kind is int else 'a number'}, got {value!r}")
            lo, hi = declared.get(name) or ((-MAX_CONFIG_INT, MAX_CONFIG_INT) if kind is int else DEFAULT_FLOAT)
            problem = range_error(name, value, lo, hi)
            if problem:
                raise ModelFileError(f"{meta_path}: config {problem.removeprefix('argument ')}")
        elif kind is bool and not isinstance(value, bool):  # "false" would read as True
            raise ModelFileError(f"{meta_path}: config {name} must be true or false, got {value!r}")
        elif kind is str and not isinstance(value, str):
            raise ModelFileError(f"{meta_path}: config {name} must be a string, got {value!r}")
    unknown = sorted(set(raw) - set(declared))
    if unknown:  # another kind of model (a Sudoku MDM's box where a protein MDM's max_len is read)
        raise ModelFileError(f"{path} is not {what}: its config has {', '.join(map(repr, unknown[:3]))}, which "
                             f"{what} does not take (a model of another kind or domain?)")
    try:
        return config_cls(**raw)
    except (TypeError, ValueError) as err:
        raise ModelFileError(f"{path}: config does not describe {what}: {err}") from None


def unreadable_weights(path: str | Path, err: Exception) -> ModelFileError:
    """The error of a weights file safetensors cannot read: an empty file, or one whose header does not read (cut
    short, or a file of another format named .safetensors), said as such rather than in safetensors' words alone."""
    if Path(path).is_file() and Path(path).stat().st_size == 0:
        return ModelFileError(f"cannot read weights {path}: the file is empty (0 bytes)")
    if "deserializing header" in str(err):
        return ModelFileError(f"cannot read weights {path}: not a whole safetensors file (cut short, or a file of "
                              f"another format) ({err})")
    return ModelFileError(f"cannot read weights {path}: {err}")


def read_header(path: str | Path) -> tuple[dict, dict[str, tuple]]:
    """The metadata and the tensors' shapes (name -> shape) of the weights file ``path`` (ModelFileError when it
    cannot be read)."""
    try:
        with safe_open(str(path), framework="pt") as fh:
            shapes = {k: tuple(fh.get_slice(k).get_shape()) for k in fh.keys()}  # noqa: SIM118  (a safe_open handle, not a dict)
            return fh.metadata() or {}, shapes
    except Exception as err:  # noqa: BLE001  (safetensors raises its own error types)
        raise unreadable_weights(path, err) from None


def shapes_problem(wanted: dict[str, tuple], stored: dict[str, tuple]) -> str | None:
    """How the tensors a config makes (``wanted``, name -> shape) differ from a file's (``stored``), or None."""
    missing, unexpected = sorted(set(wanted) - set(stored)), sorted(set(stored) - set(wanted))
    differ = [k for k in wanted if k in stored and wanted[k] != stored[k]]
    parts = [f"{len(differ)} tensor(s) differ in shape, e.g. {k} is {stored[k]} in the file and {wanted[k]} by "
             "the config" for k in differ[:1]]
    for kind, keys in (("missing", missing), ("unexpected", unexpected)):
        parts += [f"{len(keys)} {kind} (e.g. {keys[0]})"] if keys else []
    return "; ".join(parts) or None


TRAINING_ONLY = ("dropout",)  # config fields that do not change a model's outputs in eval mode


def check_saved_config(cfg, raw: dict, config_cls, path: str | Path, what: str, stored: str | None) -> None:
    """ModelFileError when ``stored``, the config :func:`save_model` stored inside the weights at ``path``, differs
    from ``cfg``, built from ``raw``, the JSON's config beside them: the JSON of another model of the same shapes
    (other ``loops`` or ``attention``) would load without complaint and give other outputs. Weights that store
    none pass."""
    if stored is None:
        return
    meta_path = Path(path).with_suffix(".json")
    try:
        saved = build_config(config_cls, json.loads(stored), path, what)
    except (ValueError, TypeError):  # ModelFileError is a ValueError; a record that is not a dict: TypeError
        raise ModelFileError(f"weights {path} do not fit the config {meta_path}: they were saved as another kind "
                             f"of model than {what}") from None
    for f in dataclasses.fields(cfg):
        ours, theirs = getattr(cfg, f.name), getattr(saved, f.name)
        if ours != theirs and f.name not in TRAINING_ONLY:
            gives = f"gives {f.name} {json.dumps(ours)}" if f.name in raw else f"has no {f.name} (default {json.dumps(ours)})"
            raise ModelFileError(f"weights {path} do not fit the config {meta_path}: it {gives}, the weights were "
                                 f"saved with {f.name} {json.dumps(theirs)} (the config of another model?)")


def load_checked(config_cls, model_cls, path: str | Path, device: torch.device | str, what: str):
    """``(model, cfg)`` loaded from ``path`` once :func:`build_config` accepts its config, which matches the one
    stored in the weights (:func:`check_saved_config`) and makes tensors of the stored shapes."""
    raw = load_meta(path)["config"]
    cfg = build_config(config_cls, raw, path, what)
    metadata, stored = read_header(path)
    check_saved_config(cfg, raw, config_cls, path, what, metadata.get("config"))
    with torch.device("meta"):
        wanted = {k: tuple(v.shape) for k, v in model_cls(cfg).state_dict().items()}
    problem = shapes_problem(wanted, stored)
    if problem:
        raise ModelFileError(f"weights {path} do not fit the config {Path(path).with_suffix('.json')}: {problem}")
    model = load_state(model_cls(cfg), path, torch.device(device))
    model.weights_path = Path(path)  # the file it came from (estimators check what they were trained on)
    return model, cfg


def load_state(model: torch.nn.Module, path: str | Path, device: torch.device) -> torch.nn.Module:
    """Load safetensors weights into ``model`` (strict), on ``device``, in eval mode."""
    try:
        state = load_file(str(path))
    except Exception as err:  # safetensors raises its own error types
        raise unreadable_weights(path, err) from None
    problem = shapes_problem({k: tuple(v.shape) for k, v in model.state_dict().items()},
                             {k: tuple(v.shape) for k, v in state.items()})
    if problem:  # torch's own message is many lines, the first of which names no tensor
        raise ModelFileError(f"weights {path} do not fit the model's config: {problem}")
    model.load_state_dict(state, strict=True)
    return model.to(device).eval()


def trained_shas(meta: dict) -> set[str]:
    """The sha256 of the MDM weights an estimator or selector was trained on (``mdm_sha256``), and of those it
    was measured to serve as well (``checked_on``: e.g. a later checkpoint, with the figure that admitted it)."""
    return {sha for sha in (meta.get("mdm_sha256"), *(c.get("sha256") for c in meta.get("checked_on", []))) if sha}


def trained_on_mismatch(model, path: str | Path | None) -> str | None:
    """``"was trained on X, not on Y"`` when the JSON of the net at ``path`` (an estimator or selector) names
    the sha256 of other MDM weights than the file ``model`` was loaded from; else None (also for no ``path``, or
    a model not loaded from a file). Another model of the same size passes every shape check but gives wrong
    answers."""
    weights = getattr(model, "weights_path", None)
    if path is None or weights is None or not Path(weights).is_file():
        return None
    meta = load_meta(path)
    want, sha = trained_shas(meta), file_sha256(weights)
    if not want or sha in want:
        return None
    trained, given = meta.get("mdm") or meta.get("denoiser", "another model"), display_path(weights)
    if str(trained).split(" ")[0] == given:  # the same path, other weights: tell them apart by their sha256
        given += f" (sha256 {sha[:12]}, not {sorted(want)[0][:12]})"
    return f"was trained on {trained}, not on {given}"
