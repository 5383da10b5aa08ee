"""A third domain that lives only in the tests: six positions that must all differ ("a".."f").

It proves the domain seam: this module registers its domain, model loader, state source and metric, and
probing, estimator data, every sampler, the decode benchmark and the app's domain list then work for it
without any core file knowing it exists. Its model is exact (the conditionals come from enumerating the
720 permutations), so its MI is known exactly too.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from mi_core.domain import Domain
from mi_core.models.base import MaskedLM, MDMOutput
from mi_core.models.mdm import DomainMDM
from mi_core.order.sequences import SequenceOrderTask
from mi_core.train.sequences import SequenceTask

N = 6
SOLUTIONS = torch.tensor(list(itertools.permutations(range(1, N + 1))))  # (720, 6) token ids


def exact_marginals(tokens: torch.Tensor) -> torch.Tensor:
    """``(B, N, V)`` float64 conditionals of each position given the visible tokens."""
    sols = SOLUTIONS.to(tokens.device)
    fits = ((tokens[:, None, :] == 0) | (tokens[:, None, :] == sols[None])).all(-1).double()  # (B, S)
    onehot = nn.functional.one_hot(sols - 1, N).double()  # (S, N, V)
    counts = torch.einsum("bs,snv->bnv", fits, onehot)
    return counts / counts.sum(-1, keepdim=True).clamp_min(1)


def exact_mi(tokens: torch.Tensor) -> torch.Tensor:
    """``(N, N)`` exact I(X_i; X_j | visible) of one state, by enumeration."""
    sols = SOLUTIONS[((tokens == 0) | (tokens == SOLUTIONS)).all(-1)]
    w = 1.0 / len(sols)
    mi = torch.zeros(N, N, dtype=torch.float64)
    for i in range(N):
        for j in range(N):
            if i == j or tokens[i] or tokens[j]:
                continue
            joint = torch.zeros(N, N, dtype=torch.float64)
            for s in sols:
                joint[s[i] - 1, s[j] - 1] += w
            pi, pj = joint.sum(1), joint.sum(0)
            nz = joint > 0
            mi[i, j] = (joint[nz] * (joint[nz] / (pi[:, None] * pj[None])[nz]).log()).sum()
    return mi


class AllDifferentModel(MaskedLM):
    seq_len = N
    hidden_size = 2 * N + 1

    def __init__(self):
        super().__init__()
        self.register_buffer("value_tokens", torch.arange(1, N + 1), persistent=False)

    def forward(self, tokens: torch.Tensor) -> MDMOutput:
        probs = exact_marginals(tokens)
        logits = torch.where(probs > 0, probs.log(), torch.full_like(probs, -1e4)).float()
        hidden = torch.cat([probs.float(), nn.functional.one_hot(tokens, N + 1).float()], -1)
        return MDMOutput(logits, hidden)


def load_toy(spec, device):
    """The exact model, or (``--model FILE``) a toy MDM ``train toy6`` made, the kind ``train-order toy6`` reads."""
    if spec is None:
        return AllDifferentModel().to(device).eval(), "the exact all-different toy (built in)"
    return TOY_MDM.loader(spec, device)


@dataclass(frozen=True)
class ToyDataConfig:
    seed: int = 0
    states: int = 8
    shard_size: int = 4
    eps: float = 0.0
    max_batch: int = 256

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


@dataclass
class NoOptions:
    pass


class ToyStates:
    config_cls = ToyDataConfig
    sources = ("uniform",)
    width = None

    def __init__(self, cfg: ToyDataConfig):
        self.cfg = cfg

    data_options = ToyDataConfig  # one option per field

    @staticmethod
    def config_from_args(args) -> ToyDataConfig:
        return ToyDataConfig(args.seed, args.states, args.shard_size, args.eps, args.max_batch)

    def options(self) -> str:
        c = self.cfg
        return f"--seed {c.seed} --states {c.states} --shard-size {c.shard_size} --eps {c.eps:g} --max-batch {c.max_batch}"

    def check(self, model) -> None:
        pass

    def draw(self, model, rng, count, device):
        out = []
        for _ in range(count):
            tokens = rng.permutation(N) + 1
            tokens[rng.choice(N, size=int(rng.integers(2, N + 1)), replace=False)] = 0
            out.append(tokens)
        return out, [0] * count

    # held-out states for eval-estimator: the same sampler (the toy has no data file to hold out)
    eval_defaults = {"states": 6, "threshold": 1e-2, "max_batch": 256}

    eval_options = NoOptions

    @staticmethod
    def held_out(args) -> "ToyStates":
        return ToyStates(ToyDataConfig(seed=args.seed))

    def info(self) -> dict:
        return {"about": "drawn by the toy's own sampler"}


class AllDifferentMetric:
    """A decoded state is right when its six values all differ (any such state is a solution)."""

    needs_solution = False

    def __init__(self, solutions, levels=None, mask_id: int = 0):
        self.rows = []

    def update(self, index, start, final, passes, extra=0) -> None:
        self.rows.append((len(set(final.tolist())) == N and 0 not in final, passes))

    def compute(self) -> dict:
        return {"n": len(self.rows), "accuracy": float(np.mean([r[0] for r in self.rows])),
                "mean_passes": float(np.mean([r[1] for r in self.rows]))}


TOY_MDM = DomainMDM("toy6", values=N, mask_id=0, pad_id=N + 1, name="toy MDM")  # a trainable model of the toy
ToyMDM = TOY_MDM.model_cls


@dataclass
class ToyTrainData:
    train_size: int = 600  # permutations drawn for training (of 720)


class ToyTask(SequenceTask):
    """``train toy6``: the engine's sequence task on random permutations (the validation set is the rest)."""

    name, model_cls, save, options = "toy6_mdm", ToyMDM, TOY_MDM.save, ToyTrainData

    def read_data(self, args, cfg, log):
        order = np.random.default_rng(cfg.split_seed).permutation(len(SOLUTIONS))
        perms = SOLUTIONS.numpy()[order]
        size = args["train_size"]
        return list(perms[:size]), list(perms[size:]), {"train": size, "val": len(perms) - size}


class ToyOrderTask(SequenceOrderTask):
    """``train-order toy6``: the engine's sequence order task on permutations, with a trained toy MDM."""

    domain, load, save_denoiser = "toy6", TOY_MDM.load, TOY_MDM.save

    def splits(self, args):
        perms = list(SOLUTIONS.numpy()[np.random.default_rng(0).permutation(len(SOLUTIONS))])
        return perms[:600], perms[600:], {"train": 600, "val": 120}


TOY = Domain("toy6", "All-different 6 (toy)", "toy6", tuple("abcdef"), names=("toy6",), length=N,
             model_loader=load_toy, states=ToyStates, metric=AllDifferentMetric, trainer=ToyTask,
             order_task=ToyOrderTask())
