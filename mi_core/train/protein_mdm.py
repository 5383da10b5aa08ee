"""Train the protein MDM: ``python -m mi_core train protein --fasta PATH --out assets/protein_mdm.safetensors``.

Data: the FASTA file split by ``mi_core.domains.protein.split_of`` (a seeded hash of each header): the
validation and reference sets are never trained on. ``X`` residues are read as masked and never
scored; sequences with other non-standard letters or over 10% ``X`` are skipped.
Sequences longer than ``max_len`` are cropped to a random window each time they are drawn. Batches are
built from length-sorted neighbours (little padding). Loss: plain mean cross-entropy over masked residues,
mask ratio t ~ U(0, 1) per sequence, at least one residue masked. AdamW, warm-up, cosine decay by steps
(or by elapsed time with ``--time-budget``),
bf16 autocast. Validation: masked CE at seeded masks (t ~ U(0, 1)) and at a fixed 15% rate, with the
perplexity exp(CE); the best checkpoint by validation CE is kept.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from mi_core.device import pick_device
from mi_core.domains.protein import MASK_ID, PAD_ID, ProteinRecord, read_fasta, split_records
from mi_core.io import check_output, default_run_path
from mi_core.models.base import load_state
from mi_core.models.protein_mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_core.options import ArgumentParser, add_force
from mi_core.scale import distributed
from mi_core.train.schedule import lr_at, progress


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    split_seed: int = 0
    steps: int = 12000
    batch: int = 64
    lr: float = 1e-3
    warmup: int = 200
    weight_decay: float = 0.01
    clip: float = 1.0
    min_len: int = 30
    eval_every: int = 500
    eval_sequences: int = 400
    bf16: bool = True
    time_budget: float = 0.0  # seconds; > 0 runs the schedule by elapsed time and stops when it is spent
    init: str = ""  # weights to start from (a checkpoint of the same config), e.g. to resume a stopped run

    def __post_init__(self):
        if min(self.steps, self.batch, self.eval_every, self.eval_sequences) < 1:
            raise ValueError("steps, batch, eval_every and eval_sequences must be positive")


def crop(tokens: np.ndarray, max_len: int, rng: np.random.Generator | None) -> np.ndarray:
    """A window of at most ``max_len`` residues: random with ``rng``, else the first ``max_len``."""
    if len(tokens) <= max_len:
        return tokens
    start = int(rng.integers(0, len(tokens) - max_len + 1)) if rng is not None else 0
    return tokens[start:start + max_len]


def pad_batch(seqs: list[np.ndarray], multiple: int = 16) -> torch.Tensor:
    """``(B, n)`` with padding, ``n`` rounded up to a multiple (fewer distinct shapes: less allocator churn)."""
    n = -(-max(len(s) for s in seqs) // multiple) * multiple
    out = np.full((len(seqs), n), PAD_ID, dtype=np.int64)
    for i, s in enumerate(seqs):
        out[i, :len(s)] = s
    return torch.from_numpy(out)


def mask_batch(clean: torch.Tensor, gen: torch.Generator, rate: float | None = None) -> torch.Tensor:
    """Masked copy of ``clean``: each sequence's rate t ~ U(0, 1) (or ``rate``), at least one residue masked."""
    real = (clean != PAD_ID) & (clean != MASK_ID)  # X (unknown) residues stay masked and are never scored
    b, n = clean.shape
    t = torch.rand(b, 1, generator=gen) if rate is None else torch.full((b, 1), rate)
    u = torch.rand(b, n, generator=gen)
    masked = (u < t) & real
    # guarantee one masked residue per sequence: the real position with the smallest u
    first = torch.where(real, u, torch.full_like(u, 2.0)).argmin(1)
    masked[torch.arange(b), first] = True
    return clean.masked_fill(masked, MASK_ID)


def scored(clean: torch.Tensor, inputs: torch.Tensor) -> torch.Tensor:
    """Positions that count in the loss: masked in ``inputs`` and a known residue in ``clean``."""
    return (inputs == MASK_ID) & (clean != MASK_ID) & (clean != PAD_ID)


class Batches:
    """Length-sorted batches over training records, reshuffled each epoch."""

    def __init__(self, records: list[ProteinRecord], batch: int, max_len: int, rng: np.random.Generator):
        self.seqs = sorted((r.tokens for r in records), key=len)
        self.batch, self.max_len, self.rng = batch, max_len, rng
        self.order: list[int] = []
        self.epoch = 0

    def __next__(self) -> torch.Tensor:
        if not self.order:
            starts = np.arange(0, len(self.seqs), self.batch)
            self.order = list(self.rng.permutation(starts))
            self.epoch += 1
        start = self.order.pop()
        return pad_batch([crop(s, self.max_len, self.rng) for s in self.seqs[start:start + self.batch]])


@torch.no_grad()
def evaluate(model: ProteinMDM, records: list[ProteinRecord], device: torch.device, seed: int = 1234, batch: int = 64) -> dict:
    """Masked CE (nats per masked residue) at seeded t ~ U(0, 1) masks and at a fixed 15% rate."""
    was_training = model.training
    model.eval()
    seqs = sorted((crop(r.tokens, model.max_len, None) for r in records), key=len)
    out = {}
    for label, rate in (("val_ce", None), ("val_ce_15", 0.15)):
        gen = torch.Generator().manual_seed(seed)
        total, count = 0.0, 0
        for i in range(0, len(seqs), batch):
            clean = pad_batch(seqs[i:i + batch])
            inputs = mask_batch(clean, gen, rate)
            masked = scored(clean, inputs)
            logits = model(inputs.to(device)).logits.cpu()
            total += F.cross_entropy(logits[masked], clean[masked] - 1, reduction="sum").item()
            count += int(masked.sum())
        out[label] = total / count
        out[label.replace("ce", "ppl")] = math.exp(total / count)
    model.train(was_training)
    return out


def train(model_cfg: ProteinMDMConfig, cfg: TrainConfig, fasta: Path, out: Path, device: torch.device, log=print) -> dict:
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(distributed.rank_seed(cfg.seed))  # under torchrun: each rank its own batches
    gen = torch.Generator().manual_seed(distributed.rank_seed(cfg.seed))
    records = read_fasta(fasta, strict=True, max_length=100_000)
    splits = split_records(records, cfg.split_seed)
    train_recs = [r for r in splits["train"] if r.length >= cfg.min_len]
    val = splits["val"][: cfg.eval_sequences]
    log(f"{len(records)} sequences (X read as masked): train {len(train_recs)} (>= {cfg.min_len} residues), "
        f"val {len(splits['val'])} (evaluating {len(val)}), reference {len(splits['reference'])}")
    model = ProteinMDM(model_cfg)
    if cfg.init:
        model = load_state(model, cfg.init, device).train()
        log(f"starting from the weights in {cfg.init}")
    model = model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, betas=(0.9, 0.98), weight_decay=cfg.weight_decay)
    autocast = torch.autocast(device.type, dtype=torch.bfloat16) if cfg.bf16 else contextlib.nullcontext()
    batches = Batches(train_recs, cfg.batch, model_cfg.max_len, rng)
    curve, start, best, losses, residues = [], time.time(), float("inf"), [], 0
    step = 0
    net = distributed.wrap(model)  # DistributedDataParallel under torchrun
    while (frac := distributed.from_main(progress(step, time.time() - start, cfg))) < 1:
        step += 1
        lr = lr_at(step - 1, frac, cfg)
        for group in opt.param_groups:
            group["lr"] = lr
        clean = next(batches)
        inputs = mask_batch(clean, gen)
        masked = scored(clean, inputs)
        residues += int((clean != PAD_ID).sum())
        clean, inputs, masked = clean.to(device), inputs.to(device), masked.to(device)
        with autocast:
            logits = net(inputs).logits
        loss = F.cross_entropy(logits[masked].float(), clean[masked] - 1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
        opt.step()
        losses.append(loss.detach())  # read back once per evaluation, not per step
        if (step % cfg.eval_every == 0 or distributed.from_main(progress(step, time.time() - start, cfg)) >= 1) \
                and distributed.is_main():  # rank 0 evaluates and writes
            point = {"step": step, "epoch": batches.epoch, "residues": residues, "seconds": round(time.time() - start, 1),
                     "train_loss": float(torch.stack(losses).double().mean()), "lr": lr, **evaluate(model, val, device)}
            losses = []
            curve.append(point)
            log(json.dumps(point))
            summary = {"train": asdict(cfg), "params": model.num_params(), "curve": curve,
                       "data": {"fasta": fasta.name, "train": len(train_recs), "val": len(splits["val"]),
                                "reference": len(splits["reference"])}}
            save_protein_mdm(model, out.with_name(out.stem + "_last.safetensors"), summary)
            if point["val_ce"] <= best:
                best = point["val_ce"]
                save_protein_mdm(model, out, {**summary, "best_step": step})
    return {"params": model.num_params(), "curve": curve, "best_val_ce": best}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``train protein``."""
    parser.add_argument("--fasta", type=Path, required=True, help="training FASTA, e.g. ../shared/data/protein/cath-dataset-nonredundant-S40.fa")
    parser.add_argument("--out", type=Path, default=None,
                        help="weights (+ .json config beside them); default runs/protein_mdm_<date-time>.safetensors")
    add_force(parser)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=0, help="torch CPU threads (0 = torch's default)")
    for f in list(ProteinMDMConfig.__dataclass_fields__.values()) + list(TrainConfig.__dataclass_fields__.values()):
        kind = type(f.default)
        if kind is bool:
            parser.add_argument(f"--{f.name.replace('_', '-')}", action=argparse.BooleanOptionalAction, default=f.default)
        else:
            parser.add_argument(f"--{f.name.replace('_', '-')}", type=kind, default=f.default)


def main(argv: list[str] | None = None) -> None:
    parser = ArgumentParser(prog="python -m mi_core train protein", description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    run(parser.parse_args(argv), parser)


def run(namespace: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> None:
    """``train protein`` with its parsed options."""
    args = {k: v for k, v in vars(namespace).items() if k != "domain"}
    args["out"] = check_output(args["out"] or default_run_path("protein_mdm"), args.pop("force"), "--out")
    threads = args.pop("threads")
    if threads:
        torch.set_num_threads(threads)
    model_cfg = ProteinMDMConfig(**{k: args[k] for k in ProteinMDMConfig.__dataclass_fields__})
    cfg = TrainConfig(**{k: args[k] for k in TrainConfig.__dataclass_fields__})
    device = distributed.setup(pick_device(args["device"]))  # joins the process group under torchrun
    main_rank = distributed.is_main()
    result = train(model_cfg, cfg, args["fasta"], args["out"], device, log=lambda m: print(m, flush=True) if main_rank else None)
    distributed.teardown()
    if main_rank:
        print(json.dumps({"best_val_ce": result["best_val_ce"], "params": result["params"]}))


if __name__ == "__main__":
    main()
