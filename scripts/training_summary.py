"""Write a Markdown training summary from the JSON stored beside a model's weights.

    PYTHONPATH=. python scripts/training_summary.py assets/sudoku_mdm.json assets/sudoku_mdm_training.md \
        --command "python -m mi_core train sudoku ..." [--note TEXT]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mi_core.bench.report import markdown_table


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("meta", type=Path)
    p.add_argument("out", type=Path)
    p.add_argument("--command", required=True)
    p.add_argument("--note", default="")
    args = p.parse_args()
    meta = json.loads(args.meta.read_text())
    curve, cfg, train = meta["curve"], meta["config"], meta["train"]
    last = curve[-1]
    if "val_mean" in last:  # an order selector (train-order)
        budgets = sorted(int(k[5:]) for k in last if k.startswith("val_T"))
        best = max(reversed(curve), key=lambda p: p["val_mean"])  # checkpoints keep the latest of ties
        unit = ("teacher-forced log-likelihood per position" if meta.get("validation", "").startswith("teacher")
                else "puzzles solved")
        shipped = (f"Shipped checkpoint (best mean validation score, the latest of ties): update {best['update']:,} "
                   f"({best['seconds'] / 60:.1f} min; the curve below ends where this checkpoint was written); validation ({unit}) at T = "
                   + ", ".join(f"{t}: {best[f'val_T{t}']} ({best[f'val_passes_T{t}']} passes; top_margin "
                               f"{best[f'margin_T{t}']})" for t in budgets) + ".")
        columns = [("update", "update"), ("seconds", "seconds"), ("elbo", "ELBO/pos"), ("kl", "KL/pos")]
        columns += [(f"q_steps_T{t}", f"Q steps T={t}") for t in budgets]
        columns += [(f"val_T{t}", f"val T={t}") for t in budgets] + [(f"val_passes_T{t}", f"passes T={t}")
                                                                      for t in budgets]
        from mi_core.decoding.selector import load_order_net

        net = load_order_net(args.meta.with_suffix(".safetensors"))
        meta["params"] = sum(p.numel() for p in net.parameters())
    elif "val_ce" in last:  # the protein MDM
        best = min(curve, key=lambda p: p["val_ce"])
        shipped = (f"Shipped checkpoint (best validation CE): step {best['step']:,}, {best['residues']:,} residues seen, "
                   f"{best['seconds'] / 60:.1f} min of training; validation masked CE {best['val_ce']:.4f} nats "
                   f"(perplexity {best['val_ppl']:.2f}) at mask rates t ~ U(0, 1), {best['val_ce_15']:.4f} "
                   f"(perplexity {best['val_ppl_15']:.2f}) at a 15% rate.")
        columns = [("step", "step"), ("epoch", "epoch"), ("seconds", "seconds"), ("train_loss", "train loss"),
                   ("lr", "lr"), ("val_ce", "val CE"), ("val_ppl", "val ppl"), ("val_ce_15", "val CE 15%"),
                   ("val_ppl_15", "val ppl 15%")]
    else:
        shipped = (f"Shipped checkpoint: step {last['step']:,}, {last['examples']:,} examples, {last['seconds'] / 60:.1f} min of "
                   f"training; validation (held-out generated puzzles, sequential decoding): {100 * last['val_accuracy']:.1f}% solved, "
                   f"{100 * last['val_cell_accuracy']:.1f}% of blank cells right, masked CE on puzzle blanks {last['val_puzzle_ce']:.3f}.")
        columns = [("step", "step"), ("examples", "examples"), ("seconds", "seconds"),
                   ("train_loss", "train loss"), ("lr", "lr"), ("val_accuracy", "val solved"),
                   ("val_cell_accuracy", "val cells"), ("val_puzzle_ce", "val CE")]
    lines = [
        f"# Training summary: {args.meta.stem}", "",
        f"Command: `{args.command}`", "",
        f"Model: {', '.join(f'{k}={v}' for k, v in cfg.items())}"
        + (f"; {meta['params']:,} parameters." if meta.get("params") else "."), "",
        f"Training: {', '.join(f'{k}={v}' for k, v in train.items())}.", "",
        shipped, "", args.note, "", "## Learning curve", "",
        markdown_table(curve, columns),
    ]
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
