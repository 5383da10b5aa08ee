"""``python -m mi_core probe sudoku --puzzle STRING [--eps E] --json OUT``: exact pairwise MI of one state.

``sudoku`` probes the 9x9 Sudoku MDM loaded from ``--model``; ``oracle4`` probes the exact 4x4 oracle
(16-character puzzles; every number it gives is exactly known). The puzzle may have several solutions (it
is a state to probe, not a puzzle to solve) but must not conflict or be unsolvable.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from mi_core.device import pick_device
from mi_core.domains.sudoku import to_string, to_tokens, validate
from mi_core.mi.probe import ProbeResult, probe

DEFAULT_MODEL = "assets/sudoku_mdm.safetensors"
DOMAINS = ("sudoku", "oracle4")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mi_core probe",
                                     description="Exact pairwise conditional MI of one state by perturbation probing.")
    parser.add_argument("domain", choices=DOMAINS, help="sudoku: the 9x9 MDM; oracle4: the exact 4x4 oracle")
    parser.add_argument("--puzzle", required=True, help="grid string, row by row, '.' or '0' for blanks")
    parser.add_argument("--eps", type=float, default=0.0, help="skip values below this probability (0: exact)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="Sudoku MDM weights (.safetensors + .json)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    parser.add_argument("--max-batch", type=int, default=512, help="most sequences per forward pass")
    parser.add_argument("--bf16", action="store_true", help="forward passes under bf16 autocast")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return parser


def load_domain(domain: str, puzzle: str, model_path: str, device: torch.device):
    """``(model, tokens (N,))`` for ``domain``; raises SudokuError / ModelFileError on bad input."""
    if domain == "oracle4":
        from mi_core.domains.oracle4 import Oracle4Model

        digits, _ = validate(puzzle, size=16, require_unique=False)
        return Oracle4Model().to(device), to_tokens([digits], device)[0]
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    digits, _ = validate(puzzle, size=None, require_unique=False)
    model = load_sudoku_mdm(model_path, device)
    if model.seq_len != len(digits):
        raise ValueError(f"the model {model_path} reads {model.seq_len} cells, the puzzle has {len(digits)}")
    return model, to_tokens([digits], device)[0]


def tqdm_progress(disable: bool):
    """``(progress(done, total), close())``: a tqdm bar on stderr, opened at the first report."""
    from tqdm import tqdm

    state = {}

    def update(done: int, total: int) -> None:
        if "bar" not in state:
            state["bar"] = tqdm(total=total, unit="pass", file=sys.stderr, disable=disable, leave=False)
        state["bar"].update(done - state["bar"].n)

    def close() -> None:
        if "bar" in state:
            state["bar"].close()

    return update, close


def summary(result: ProbeResult) -> str:
    """A few lines for the terminal: cost, strongest pair, diagnostics."""
    n = result.mi.shape[0]
    flat = int(result.mi.argmax())
    i, j = divmod(flat, n)
    return "\n".join(
        [
            f"probed {int(result.probed.sum())} masked positions: {result.passes} passes in {result.seconds:.2f} s",
            f"largest MI {float(result.mi[i, j]):.4g} nats between positions {i} and {j}",
            f"max asymmetry |I(i->j) - I(j->i)| {float(result.asymmetry.max()):.3g}; "
            f"max gap to the paper form {float(result.form_gap.max()):.3g}",
            f"eps {result.eps:g}: error bound {float(result.error_bound.max()):.3g} nats",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    device = pick_device(args.device)
    model, tokens = load_domain(args.domain, args.puzzle, args.model, device)
    update, close = tqdm_progress(args.no_progress)
    try:
        result = probe(model, tokens, eps=args.eps, max_batch=args.max_batch, progress=update, autocast=args.bf16)
    finally:
        close()
    if args.json is not None:
        payload = {"domain": args.domain, "puzzle": to_string(tokens.cpu()), "device": str(device),
                   **result.to_json_dict()}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload) + "\n")
    print(summary(result))
    return 0
