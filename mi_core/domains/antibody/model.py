"""AntiBERTy (Ruffolo, Gray and Sulam 2021, arXiv:2112.07782; a BERT of 8 layers, 512 wide, 26M parameters) in
plain torch behind the MI Lens model interface.

The weights ship inside the ``antiberty==0.1.3`` wheel; this module finds them without importing the package
(whose runner needs ``transformers``) and reads only tensors (``torch.load(weights_only=True)``). AntiBERTy's
vocabulary is ``[PAD]`` 0, ``[UNK]`` 1, ``[CLS]`` 2, ``[SEP]`` 3, ``[MASK]`` 4, then the 20 amino acids in our
order, so our token ``t`` (1..20) is its ``t + 4``. Rows are laid out ``[CLS] residues [SEP] [PAD]...``."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mi_core.domains.protein import MASK_ID
from mi_core.domains.protein.esmc import check_tokens, read_state_dict, translation_table, wrap_rows
from mi_core.io import user_path
from mi_core.models.base import MaskedLM, MDMOutput, ModelFileError, build_config, read_json_object, shapes_problem
from mi_core.options import option

INSTALL_HINT = "pip install antiberty==0.1.3 (its wheel carries the weights; see README, 'Antibodies')"
PAD, CLS, SEP, MASK = 0, 2, 3, 4  # AntiBERTy's special ids (vocab.txt)
FIRST_AA = 5  # AntiBERTy's id of 'A'; the 20 amino acids follow in our order


class AntiBERTyMissing(ImportError, ValueError):
    """The ``antiberty`` package (which carries the weights) is missing (a ValueError too: one CLI line)."""


@dataclass(frozen=True)
class BertConfig:
    """The fields of AntiBERTy's ``config.json`` this BERT reads."""

    vocab_size: int = option(25, range=(FIRST_AA + 20, 100_000))
    hidden_size: int = option(512, range=(1, 8192))
    num_hidden_layers: int = option(8, range=(1, 256))
    num_attention_heads: int = option(8, range=(1, 256))
    intermediate_size: int = option(2048, range=(1, 65_536))
    max_position_embeddings: int = option(512, range=(3, 100_000))  # [CLS], [SEP] and at least one residue
    type_vocab_size: int = option(2, range=(1, 1024))
    layer_norm_eps: float = option(1e-12, range=(1e-30, 1))

    def __post_init__(self):
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size {self.hidden_size} is not divisible by num_attention_heads "
                             f"{self.num_attention_heads}")

    @classmethod
    def from_json(cls, path: Path) -> BertConfig:
        """The fields of ``path`` this BERT reads (the rest of a transformers config is ignored), each checked for
        its type and range (ModelFileError names the file and the field)."""
        raw = read_json_object(path, "config")
        return build_config(cls, {k: raw[k] for k in cls.__dataclass_fields__ if k in raw}, path, "AntiBERTy")


class BertLayer(nn.Module):
    """Post-LayerNorm BERT block: self-attention and a GELU MLP, each added back and normalised."""

    def __init__(self, cfg: BertConfig):
        super().__init__()
        d, eps = cfg.hidden_size, cfg.layer_norm_eps
        self.heads = cfg.num_attention_heads
        self.query, self.key, self.value, self.out = (nn.Linear(d, d) for _ in range(4))
        self.norm1, self.norm2 = nn.LayerNorm(d, eps=eps), nn.LayerNorm(d, eps=eps)
        self.up, self.down = nn.Linear(d, cfg.intermediate_size), nn.Linear(cfg.intermediate_size, d)

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """``x`` ``(B, T, D)``, ``keep`` ``(B, 1, 1, T)`` bool (keys that are not padding)."""
        b, t, d = x.shape

        def split(z):
            return z.view(b, t, self.heads, d // self.heads).transpose(1, 2)

        att = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)),
                                             attn_mask=keep)
        x = self.norm1(x + self.out(att.transpose(1, 2).reshape(b, t, d)))
        return self.norm2(x + self.down(F.gelu(self.up(x))))


class AntiBERTy(MaskedLM):
    """Our token ids ``(B, N)`` -> ``MDMOutput(logits (B, N, 20) float32, hidden (B, N, 512))``: the masked-LM
    logits of the 20 amino acids and the last layer's output at each residue."""

    mask_id = MASK_ID
    max_len = hidden_size = None  # per instance (shadowing MaskedLM's properties)

    def __init__(self, cfg: BertConfig = BertConfig()):
        super().__init__()
        self.cfg_bert = cfg
        self.max_len, self.hidden_size = cfg.max_position_embeddings - 2, cfg.hidden_size  # less [CLS] and [SEP]
        d = cfg.hidden_size
        self.word = nn.Embedding(cfg.vocab_size, d)
        self.position = nn.Embedding(cfg.max_position_embeddings, d)
        self.token_type = nn.Embedding(cfg.type_vocab_size, d)
        self.embed_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.layers = nn.ModuleList(BertLayer(cfg) for _ in range(cfg.num_hidden_layers))
        self.head_dense = nn.Linear(d, d)
        self.head_norm = nn.LayerNorm(d, eps=cfg.layer_norm_eps)
        self.decoder = nn.Linear(d, cfg.vocab_size)
        self.register_buffer("value_tokens", torch.arange(1, 21), persistent=False)
        ids = {"mask": MASK, "pad": PAD, "values": list(range(FIRST_AA, FIRST_AA + 20))}
        self.register_buffer("to_bert", translation_table(ids), persistent=False)  # (22,) our id -> AntiBERTy's

    def layout(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """AntiBERTy ids ``(B, N + 2)`` and, per our position, its index there ``(B, N)``."""
        check_tokens(tokens, self.max_len, "a chain", "AntiBERTy")
        return wrap_rows(tokens, self.to_bert, PAD, CLS, SEP)

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        ids, index = self.layout(tokens)
        x = self.embed_norm(self.word(ids) + self.position.weight[:ids.shape[1]] + self.token_type.weight[0])
        keep = (ids != PAD)[:, None, None, :]  # (B, 1, 1, T): keys that are not padding
        for layer in self.layers:
            x = layer(x, keep)
        hidden = x.gather(1, index[..., None].expand(-1, -1, x.shape[-1]))
        logits = self.decoder(self.head_norm(F.gelu(self.head_dense(hidden))))  # (B, N, 25): the masked-LM head
        return MDMOutput(logits[..., FIRST_AA:FIRST_AA + 20].float(), hidden)


# our tensor names -> AntiBERTy's (transformers' BertForMaskedLM), per layer and for the rest
LAYER_NAMES = {"query": "attention.self.query", "key": "attention.self.key", "value": "attention.self.value",
               "out": "attention.output.dense", "norm1": "attention.output.LayerNorm",
               "up": "intermediate.dense", "down": "output.dense", "norm2": "output.LayerNorm"}
OTHER_NAMES = {"word": "bert.embeddings.word_embeddings", "position": "bert.embeddings.position_embeddings",
               "token_type": "bert.embeddings.token_type_embeddings", "embed_norm": "bert.embeddings.LayerNorm",
               "head_dense": "cls.predictions.transform.dense", "head_norm": "cls.predictions.transform.LayerNorm",
               "decoder": "cls.predictions.decoder"}
UNUSED = ("bert.pooler.", "cls.species.", "cls.chain.", "cls.graft.", "bert.embeddings.position_ids",
          "cls.predictions.bias")  # the pooler and the extra heads; the bias is the decoder's, tied


def weights_folder() -> Path:
    """The installed package's weights folder (AntiBERTyMissing when there is none)."""
    spec = importlib.util.find_spec("antiberty")
    if spec is None or not spec.submodule_search_locations:
        raise AntiBERTyMissing(f"AntiBERTy is not installed: {INSTALL_HINT}")
    folder = Path(list(spec.submodule_search_locations)[0]).joinpath("trained_models", "AntiBERTy_md_smooth")
    if not (folder / "pytorch_model.bin").is_file():
        raise AntiBERTyMissing(f"the antiberty package at {folder.parents[1]} ships no weights (version 0.1.3 "
                               f"does; 1.x fetches them at run time): {INSTALL_HINT}")
    return folder


def bert_name(key: str) -> str:
    """AntiBERTy's name (transformers' BertForMaskedLM) of one of :class:`AntiBERTy`'s tensors."""
    stem, _, leaf = key.rpartition(".")
    if stem.startswith("layers."):
        _, number, name = stem.split(".")
        return f"bert.encoder.layer.{number}.{LAYER_NAMES[name]}.{leaf}"
    return f"{OTHER_NAMES[stem]}.{leaf}"


def convert_state(state: dict, model: AntiBERTy) -> dict[str, torch.Tensor]:
    """AntiBERTy's state dict renamed to ``model``'s (unused heads dropped; ModelFileError on an unknown tensor)."""
    ours = {bert_name(k): k for k in model.state_dict()}
    unknown = [k for k in state if k not in ours and not k.startswith(UNUSED)]
    if unknown:
        raise ModelFileError(f"unexpected tensor {unknown[0]!r} in the AntiBERTy weights")
    return {ours[k]: v for k, v in state.items() if k in ours}


def load_antiberty(folder: str | Path | None = None, device: torch.device | str = "cpu") -> AntiBERTy:
    """:class:`AntiBERTy` with the installed weights (or those in ``folder``) in eval mode."""
    folder = weights_folder() if folder is None else Path(folder)
    path, config = folder / "pytorch_model.bin", folder / "config.json"
    if not folder.exists():
        raise ModelFileError(f"AntiBERTy weights folder not found: {folder}")
    if not path.is_file() or not config.is_file():
        raise ModelFileError(f"{folder} holds no pytorch_model.bin and config.json")
    state = read_state_dict(path, "AntiBERTy weights (a torch state dict)")
    cfg = BertConfig.from_json(config)
    with torch.device("meta"):  # the shapes first: a config of another size allocates nothing
        skeleton = AntiBERTy(cfg)
    state = convert_state(state, skeleton)
    problem = shapes_problem({k: tuple(v.shape) for k, v in skeleton.state_dict().items()},
                             {k: tuple(getattr(v, "shape", ())) for k, v in state.items()})
    if problem:
        raise ModelFileError(f"{path} does not fit the config {config}: {problem}")
    model = AntiBERTy(cfg)
    model.load_state_dict(state, strict=True)
    model.weights_path = path
    return model.to(torch.device(device)).eval()


def load(spec: str | Path | None, device) -> tuple[AntiBERTy, str]:
    """``(model, description)`` of ``auto``/``antiberty``/None (the installed package) or a weights folder."""
    spec = None if spec in (None, "", "auto", "antiberty") else user_path(str(spec))
    if spec is not None and spec.is_file():
        if spec.name not in ("pytorch_model.bin", "config.json"):  # its folder held neither: a wrong file given
            raise ModelFileError(f"{spec} is not AntiBERTy's weights: give their folder (holding pytorch_model.bin "
                                 "and config.json) or its pytorch_model.bin")
        spec = spec.parent
    model = load_antiberty(spec, device)
    return model, (f"AntiBERTy (Ruffolo, Gray and Sulam 2021; {model.num_params() / 1e6:.1f}M parameters, max "
                   f"{model.max_len} residues)")

