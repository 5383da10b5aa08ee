"""ESM-C (EvolutionaryScale's ESM Cambrian, ``esm==3.2.1.post1``) behind the MI Lens model interface.

:class:`ESMCAdapter` translates our tokens to ESM-C's vocabulary (ids always from ``ESMC.tokenizer``) and its
64 logit slots back to the 20 amino acids, so an MI map of ESM-C is comparable with one of the protein MDM.
Each row is laid out ``BOS, residues, EOS, padding`` with ``sequence_id = tokens != pad``: real residues never
attend to padding and keep their rotary positions. ESM-C was trained on contexts of up to 2048 tokens.
Weights never come from the network: an explicit path, ``MI_LENS_ESMC_WEIGHTS`` or the Hugging Face cache."""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, PAD_ID, VOCAB_SIZE
from mi_core.io import UnreadableFile, torch_load
from mi_core.models.base import MaskedLM, MDMOutput, ModelFileError

ESMC_MAX_LEN = 2046  # residues: a 2048-token training context less BOS and EOS
WEIGHTS_ENV = "MI_LENS_ESMC_WEIGHTS"
ESM_INSTALL_HINT = "it is an optional extra: pip install -r requirements-esm.txt (esm==3.2.1.post1 and httpx)"
# Released checkpoints, in the order "auto" prefers them (300M first: the probe runs 1 + 20N passes)
HF_CHECKPOINTS = (("EvolutionaryScale/esmc-300m-2024-12", "esmc_300m_2024_12_v0.pth"),
                  ("EvolutionaryScale/esmc-600m-2024-12", "esmc_600m_2024_12_v0.pth"))
# Released sizes: d_model -> (name, attention heads); head counts are not recoverable from the weights.
KNOWN_SIZES = {960: ("ESM-C 300M", 15), 1152: ("ESM-C 600M", 18)}
HEAD_DIM = 64  # both released models use 64-dimensional heads; the default for other sizes


class ESMPackageMissing(ImportError, ValueError):
    """The optional ``esm`` package is missing (a ValueError too, so the CLI prints one line)."""


class ESMCAdapter(MaskedLM):
    """Our token ids ``(B, N)`` -> ``MDMOutput(logits (B, N, 20) float32, hidden (B, N, D))``: an ESMC's logits
    of the 20 amino acids and final-norm embedding of each residue (meaningless at padding)."""

    mask_id = MASK_ID
    max_len = hidden_size = None  # per instance (shadowing MaskedLM's properties)

    def __init__(self, esmc: nn.Module, name: str = "ESM-C", max_len: int = ESMC_MAX_LEN):
        super().__init__()
        self.esmc = esmc.eval()
        self.name, self.max_len, self.hidden_size = name, max_len, int(esmc.embed.embedding_dim)
        ids = esm_ids(esmc.tokenizer)
        self.register_buffer("value_tokens", torch.arange(1, 21), persistent=False)
        self.register_buffer("esm_values", torch.tensor(ids["values"]), persistent=False)  # (20,)
        self.register_buffer("to_esm", translation_table(ids), persistent=False)  # (22,)
        self.bos_id, self.eos_id, self.pad_id = ids["bos"], ids["eos"], ids["pad"]

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        esm_tokens, index = self.layout(tokens)
        out = self.esmc(sequence_tokens=esm_tokens, sequence_id=esm_tokens != self.pad_id)
        rows = index[..., None]
        hidden = out.embeddings.gather(1, rows.expand(-1, -1, out.embeddings.shape[-1]))
        logits = out.sequence_logits.gather(1, rows.expand(-1, -1, out.sequence_logits.shape[-1]))
        return MDMOutput(logits[..., self.esm_values].float(), hidden)

    def layout(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ESM-C input ``(B, N + 2)`` and, per our position, its index there ``(B, N)``."""
        check_tokens(tokens, self.max_len, "sequence", self.name)
        return wrap_rows(tokens, self.to_esm, self.pad_id, self.bos_id, self.eos_id)


def check_tokens(tokens: torch.Tensor, max_len: int, unit: str, name: str) -> None:
    """Raise ValueError unless ``tokens`` is int64 ``(B, N)`` of our ids with ``N <= max_len``."""
    if tokens.dim() != 2 or tokens.dtype != torch.long:
        raise ValueError(f"tokens must be int64 of shape (B, N), got {tuple(tokens.shape)} {tokens.dtype}")
    if tokens.shape[1] > max_len:
        raise ValueError(f"{unit} of {tokens.shape[1]} residues is longer than the {max_len} {name} takes")
    if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= VOCAB_SIZE):
        raise ValueError(f"token ids must be in 0..{VOCAB_SIZE - 1} (mi_core.domains.protein)")


def wrap_rows(tokens: torch.Tensor, table: torch.Tensor, pad: int, bos: int,
              eos: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Rows ``(B, N + 2)`` of another vocabulary (``table``: our id -> its id) laid out ``BOS, residues (in order),
    EOS, padding``, and per our position its index there ``(B, N)``: padding never shifts a residue's position."""
    b, n = tokens.shape
    real = tokens != PAD_ID
    length = real.sum(1, keepdim=True)  # (B, 1)
    index = torch.where(real, real.cumsum(1), length + 1 + (~real).cumsum(1))  # residues 1..L, padding L+2..
    ids = torch.full((b, n + 2), pad, dtype=torch.long, device=tokens.device)
    ids.scatter_(1, index, table[tokens])
    ids[:, 0] = bos
    ids.scatter_(1, length + 1, eos)
    return ids, index


def esm_ids(tokenizer) -> dict:
    """ESM-C's ids of our 20 amino acids (in our order), mask, padding, BOS and EOS, from its tokenizer."""
    values = [int(tokenizer.convert_tokens_to_ids(aa)) for aa in AMINO_ACIDS]
    special = {"mask": tokenizer.mask_token_id, "pad": tokenizer.pad_token_id,
               "bos": tokenizer.bos_token_id, "eos": tokenizer.eos_token_id}
    if len(set(values)) != 20 or tokenizer.unk_token_id in values or None in special.values():
        raise ModelFileError("the esm tokenizer does not have the 20 amino acids, mask, pad, BOS and EOS tokens")
    return {"values": values, **{k: int(v) for k, v in special.items()}}


def translation_table(ids: dict) -> torch.Tensor:
    """``(22,)`` long: ESM-C's id of each of our token ids."""
    table = torch.empty(VOCAB_SIZE, dtype=torch.long)
    table[MASK_ID] = ids["mask"]
    table[1:21] = torch.tensor(ids["values"])
    table[PAD_ID] = ids["pad"]
    return table


def hf_hub_cache() -> Path:
    """``HF_HUB_CACHE``, else ``HF_HOME/hub``, else the default hub cache."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser()
    return cache / "huggingface" / "hub"


def hf_cached_weights(cache: Path) -> Path | None:
    """The first released ESM-C checkpoint in a hub cache (the ``refs/main`` snapshot, else the newest)."""
    for repo, filename in HF_CHECKPOINTS:
        root = cache / ("models--" + repo.replace("/", "--"))
        ref = root / "refs" / "main"
        snapshots = [root / "snapshots" / ref.read_text().strip()] if ref.is_file() else []
        if (root / "snapshots").is_dir():
            snapshots += sorted((root / "snapshots").iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)
        for snap in snapshots:
            path = snap / "data" / "weights" / filename
            if path.is_file():
                return path
    return None


def weights_in(path: Path) -> Path:
    """``path`` itself (a ``.pth`` file) or the first ``esmc_*.pth`` inside a directory (or its data/weights)."""
    if path.is_file():
        return path
    if path.is_dir():
        found = sorted(path.glob("esmc_*.pth")) + sorted(path.glob("data/weights/esmc_*.pth"))
        if found:
            return found[0]
        raise ModelFileError(f"no esmc_*.pth in {path} or {path / 'data' / 'weights'}")
    raise ModelFileError(f"ESM-C weights not found: {path}")


def find_esmc_weights(spec: str | Path | None = None) -> Path | None:
    """The ESM-C checkpoint in ``spec`` (a ``.pth`` or a directory), else ``MI_LENS_ESMC_WEIGHTS``, else the
    Hugging Face cache; None when there is none."""
    if spec:
        return weights_in(Path(spec).expanduser())
    if os.environ.get(WEIGHTS_ENV):
        try:
            return weights_in(Path(os.environ[WEIGHTS_ENV]).expanduser())
        except ModelFileError as err:
            raise ModelFileError(f"{WEIGHTS_ENV}: {err}") from None
    return hf_cached_weights(hf_hub_cache())


def where_searched() -> str:
    """Where :func:`find_esmc_weights` looks without a path, for messages."""
    env = os.environ.get(WEIGHTS_ENV) or "unset"
    return f"{WEIGHTS_ENV} ({env}) or the Hugging Face cache ({hf_hub_cache()})"


def esmc_dims(state: dict, n_heads: int | None = None) -> tuple[int, int, int]:
    """``(d_model, n_heads, n_layers)`` of an ESM-C state dict, from its shapes and the known sizes."""
    embed = state.get("embed.weight")
    if not isinstance(embed, torch.Tensor) or embed.dim() != 2:
        raise ModelFileError("not an ESM-C state dict (no 'embed.weight' matrix)")
    d_model = int(embed.shape[1])
    n_layers = len({k.split(".")[2] for k in state if k.startswith("transformer.blocks.")})
    heads = n_heads or KNOWN_SIZES.get(d_model, (None, max(1, d_model // HEAD_DIM)))[1]
    if n_layers < 1 or d_model % heads:
        raise ModelFileError(f"not a usable ESM-C state dict: d_model {d_model}, {n_layers} layers, {heads} heads")
    return d_model, heads, n_layers


def read_state_dict(path: Path, what: str = "an ESM-C state dict") -> dict:
    """The state dict (``what``) of an existing torch file, on the CPU (tensors only; never unpickles code)."""
    try:
        state = torch_load(path)
    except UnreadableFile as err:
        raise ModelFileError(f"{path} is not {what} (torch.load: {err})") from None
    if not isinstance(state, dict):
        raise ModelFileError(f"{path} holds a {type(state).__name__}, not {what}")
    return state


def load_esmc(path: str | Path, device: torch.device | str = "cpu", n_heads: int | None = None) -> ESMCAdapter:
    """An :class:`ESMCAdapter` over the checkpoint at ``path`` in eval mode, sized from its weights."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"ESM-C weights not found: {path}")
    state = read_state_dict(path)
    d_model, heads, n_layers = esmc_dims(state, n_heads)
    esmc = build_esmc(d_model, heads, n_layers)
    try:
        esmc.load_state_dict(state, strict=True)
    except RuntimeError as err:
        raise ModelFileError(f"{path} does not fit an ESM-C with d_model {d_model}, {heads} heads, "
                             f"{n_layers} layers: {str(err).splitlines()[0]}") from None
    name = KNOWN_SIZES.get(d_model, (f"ESM-C (d_model {d_model}, {n_layers} layers)",))[0]
    return ESMCAdapter(esmc, name=name).to(torch.device(device)).eval()


def build_esmc(d_model: int, n_heads: int, n_layers: int) -> nn.Module:
    """A randomly initialised ``esm.models.esmc.ESMC`` of this size (plain attention, no flash-attn)."""
    try:
        from esm.models.esmc import ESMC
        from esm.tokenization import get_esmc_model_tokenizers
    except ImportError as err:
        raise ESMPackageMissing(f"ESM-C needs the esm package ({err}): {ESM_INSTALL_HINT}") from None
    return ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers,
                tokenizer=get_esmc_model_tokenizers(), use_flash_attn=False)
