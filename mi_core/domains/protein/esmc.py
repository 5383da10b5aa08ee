"""ESM-C (EvolutionaryScale's ESM Cambrian) behind the MI Lens model interface, loaded offline only.

Why an adapter: probes, estimators and decoders speak one tokenization (``mi_core.domains.protein``: 0 mask,
1..20 = ``ACDEFGHIKLMNPQRSTVWY``, 21 padding) and expect logits over the 20 amino acids only. ESM-C has its
own vocabulary (64 logit slots, 33 used), wraps each sequence in BOS/EOS and marks padding with its own id.
:class:`ESMCAdapter` translates in both directions and nothing else, so an MI map of ESM-C is directly
comparable with one of the protein MDM.

Facts about ``esm==3.2.1.post1`` this module relies on (checked against the package, and by
``tests/test_esmc.py`` against the package's own tokenizer):

* Ids come from ``ESMC.tokenizer`` (never hard-coded): amino acids are ids 4..23 in the order
  ``L A G V S E R T I D P K Q N F Y M H W C``, ``<mask>`` 32, ``<pad>`` 1, BOS (``<cls>``) 0, EOS 2.
* Padding: ``ESMC.forward`` lets position i attend to j only where ``sequence_id[i] == sequence_id[j]``;
  with ``sequence_id = tokens != pad`` real tokens never see padding. Positions are rotary from index 0,
  so each row is laid out ``BOS, residues, EOS, padding``: a real residue's output does not depend on how
  much padding its row carries (up to float rounding of a longer softmax).
* Length: rotary positions set no hard limit; ESM-C was trained on contexts of up to 2048 tokens
  (per EvolutionaryScale's ESM C release), so :data:`ESMC_MAX_LEN` = 2046 residues plus BOS and EOS.

Weights never come from the network: :func:`find_esmc_weights` looks at an explicit path,
``MI_LENS_ESMC_WEIGHTS``, and the local Hugging Face cache, where ``ESMC.from_pretrained`` would have left
them; :func:`load_esmc` builds the model from the checkpoint's shapes and loads it.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import nn

from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, PAD_ID, VOCAB_SIZE
from mi_core.models.base import MaskedLM, MDMOutput, ModelFileError

ESMC_MAX_LEN = 2046  # residues: a 2048-token training context less BOS and EOS
WEIGHTS_ENV = "MI_LENS_ESMC_WEIGHTS"
ESM_INSTALL_HINT = "it is an optional extra: pip install -r requirements-esm.txt (esm==3.2.1.post1 and httpx)"
# Released checkpoints, in the order "auto" prefers them (300M first: the probe runs 1 + 20N passes).
HF_CHECKPOINTS = (("EvolutionaryScale/esmc-300m-2024-12", "esmc_300m_2024_12_v0.pth"),
                  ("EvolutionaryScale/esmc-600m-2024-12", "esmc_600m_2024_12_v0.pth"))
# Released sizes: d_model -> (name, attention heads); head counts are not recoverable from the weights.
KNOWN_SIZES = {960: ("ESM-C 300M", 15), 1152: ("ESM-C 600M", 18)}
HEAD_DIM = 64  # both released models use 64-dimensional heads; the default for other sizes


class ESMPackageMissing(ImportError, ValueError):
    """The optional ``esm`` package is not installed (a ValueError too, so the CLI prints one line)."""


class ESMCAdapter(MaskedLM):
    """Our token ids ``(B, N)`` -> ``MDMOutput(logits (B, N, 20) float32, hidden (B, N, D))`` from an ESMC.

    ``logits[..., v]`` is ESM-C's logit of amino acid ``AMINO_ACIDS[v]`` (the 44 other slots are dropped,
    so a softmax renormalises over the 20); ``hidden`` is ESM-C's final-norm embedding of each residue,
    BOS and EOS removed. Padding (id 21) may sit anywhere in a row: real residues are packed in order
    behind BOS, so padding never shifts their rotary positions; outputs at padding are meaningless.
    """

    mask_id = MASK_ID

    def __init__(self, esmc: nn.Module, name: str = "ESM-C", max_len: int = ESMC_MAX_LEN):
        super().__init__()
        self.esmc = esmc.eval()
        self.name = name
        self._max_len = max_len
        ids = esm_ids(esmc.tokenizer)
        self.register_buffer("value_tokens", torch.arange(1, 21), persistent=False)
        self.register_buffer("esm_values", torch.tensor(ids["values"]), persistent=False)  # (20,)
        self.register_buffer("to_esm", translation_table(ids), persistent=False)  # (22,)
        self.bos_id, self.eos_id, self.pad_id = ids["bos"], ids["eos"], ids["pad"]

    @property
    def max_len(self) -> int:
        return self._max_len

    @property
    def hidden_size(self) -> int:
        return int(self.esmc.embed.embedding_dim)

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        esm_tokens, index = self.layout(tokens)
        out = self.esmc(sequence_tokens=esm_tokens, sequence_id=esm_tokens != self.pad_id)
        rows = index[..., None]
        hidden = out.embeddings.gather(1, rows.expand(-1, -1, out.embeddings.shape[-1]))
        logits = out.sequence_logits.gather(1, rows.expand(-1, -1, out.sequence_logits.shape[-1]))
        return MDMOutput(logits[..., self.esm_values].float(), hidden)

    def layout(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """ESM-C input ``(B, N + 2)`` and, per our position, its index there ``(B, N)``.

        Row layout: ``BOS, residues (in order), EOS, padding``; our padding maps to ESM's padding slots.
        """
        self.check(tokens)
        b, n = tokens.shape
        real = tokens != PAD_ID
        length = real.sum(1, keepdim=True)  # (B, 1)
        index = torch.where(real, real.cumsum(1), length + 1 + (~real).cumsum(1))  # residues 1..L, padding L+2..
        esm_tokens = torch.full((b, n + 2), self.pad_id, dtype=torch.long, device=tokens.device)
        esm_tokens.scatter_(1, index, self.to_esm[tokens])
        esm_tokens[:, 0] = self.bos_id
        esm_tokens.scatter_(1, length + 1, self.eos_id)
        return esm_tokens, index

    def check(self, tokens: torch.Tensor) -> None:
        if tokens.dim() != 2 or tokens.dtype != torch.long:
            raise ValueError(f"tokens must be int64 of shape (B, N), got {tuple(tokens.shape)} {tokens.dtype}")
        if tokens.shape[1] > self.max_len:
            raise ValueError(f"sequence of {tokens.shape[1]} residues is longer than the {self.max_len} {self.name} takes")
        if tokens.numel() and (int(tokens.min()) < 0 or int(tokens.max()) >= VOCAB_SIZE):
            raise ValueError(f"token ids must be in 0..{VOCAB_SIZE - 1} (mi_core.domains.protein)")


def esm_ids(tokenizer) -> dict:
    """ESM-C's ids of our 20 amino acids (in our order), mask, padding, BOS and EOS, from its tokenizer."""
    values = [int(tokenizer.convert_tokens_to_ids(aa)) for aa in AMINO_ACIDS]
    special = {"mask": tokenizer.mask_token_id, "pad": tokenizer.pad_token_id,
               "bos": tokenizer.bos_token_id, "eos": tokenizer.eos_token_id}
    if len(set(values)) != 20 or tokenizer.unk_token_id in values or None in special.values():
        raise ModelFileError("the esm tokenizer does not have the 20 amino acids, mask, pad, BOS and EOS tokens")
    return {"values": values, **{k: int(v) for k, v in special.items()}}


def translation_table(ids: dict) -> torch.Tensor:
    """``(22,)`` long: ESM-C id of each of our token ids (mask, 20 amino acids, padding)."""
    table = torch.empty(VOCAB_SIZE, dtype=torch.long)
    table[MASK_ID] = ids["mask"]
    table[1:21] = torch.tensor(ids["values"])
    table[PAD_ID] = ids["pad"]
    return table


# ---- finding weights (no network) ----


def hf_hub_cache() -> Path:
    """The Hugging Face hub cache directory: ``HF_HUB_CACHE``, else ``HF_HOME/hub``, else the default."""
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
    """The ESM-C checkpoint to load, or None when there is none on this machine.

    Looks at (a) ``spec`` (a ``.pth`` file or a directory holding ``data/weights/esmc_*.pth``), (b) the
    ``MI_LENS_ESMC_WEIGHTS`` environment variable, (c) the Hugging Face hub cache (see :func:`hf_hub_cache`),
    in that order. Raises ModelFileError when (a) or (b) is given but holds no weights.
    """
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


# ---- loading ----


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


def read_checkpoint(path: Path) -> dict:
    """The state dict in a ``.pth`` file (tensors only; never unpickles code)."""
    if not path.is_file():
        raise ModelFileError(f"ESM-C weights not found: {path}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001  (garbage raises IndexError, EOFError, UnpicklingError, RuntimeError...)
        raise ModelFileError(f"{path} is not a readable torch checkpoint: {type(err).__name__}: {err}") from None
    if not isinstance(state, dict):
        raise ModelFileError(f"{path} holds a {type(state).__name__}, not an ESM-C state dict")
    return state


def load_esmc(path: str | Path, device: torch.device | str = "cpu", n_heads: int | None = None) -> ESMCAdapter:
    """An :class:`ESMCAdapter` over the ESM-C checkpoint at ``path``, on ``device``, in eval mode.

    Sizes are read from the weights (so any ESM-C checkpoint loads); the head count comes from the released
    sizes (300M: 15, 600M: 18), else ``n_heads``, else ``d_model // 64``.
    Raises:
        ModelFileError: missing file, not a torch checkpoint, or weights that do not fit an ESM-C;
            ESMPackageMissing (an ImportError, with the install line) when ``esm`` is not installed.
    """
    path = Path(path)
    state = read_checkpoint(path)
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
