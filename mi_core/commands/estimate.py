"""``python -m mi_core estimate sudoku --puzzle STRING --json OUT``: pairwise MI from the neural estimator.

One forward pass of the Sudoku MDM plus the estimator head. The JSON has the same keys and layout as
``probe``'s for ``mi`` (81 x 81), ``entropy``, ``marginals``, ``passes`` and ``seconds`` (the median of
5 timed runs after a warm-up). The puzzle may
have several solutions (it is a state, not a puzzle to solve) but must not conflict or be unsolvable.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import torch

from mi_core.device import pick_device
from mi_core.domains.sudoku import to_string, to_tokens, validate
from mi_core.mi.estimator import Estimate, estimate_mi, load_estimator

DEFAULT_MODEL = "assets/sudoku_mdm.safetensors"
DEFAULT_ESTIMATOR = "assets/sudoku_mi_estimator.safetensors"
TIMED_RUNS = 5


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mi_core estimate", description=__doc__.split("\n\n")[0])
    parser.add_argument("domain", choices=["sudoku"], help="sudoku: the 9x9 MDM and its estimator")
    parser.add_argument("--puzzle", required=True, help="grid string, row by row, '.' or '0' for blanks")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="Sudoku MDM weights (.safetensors + .json)")
    parser.add_argument("--estimator", default=DEFAULT_ESTIMATOR, help="estimator weights (.safetensors + .json)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    return parser


def load(puzzle: str, model_path: str, estimator_path: str, device: torch.device):
    """``(model, estimator, tokens (1, 81))``; raises SudokuError / ModelFileError / ValueError on bad input."""
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    digits, _ = validate(puzzle, size=None, require_unique=False)
    model = load_sudoku_mdm(model_path, device)
    if model.seq_len != len(digits):
        raise ValueError(f"the model {model_path} reads {model.seq_len} cells, the puzzle has {len(digits)}")
    estimator = load_estimator(estimator_path, device)
    if estimator.cfg.d_in != model.cfg.d_model:
        raise ValueError(f"the estimator {estimator_path} reads hidden size {estimator.cfg.d_in}, "
                         f"the model {model_path} has {model.cfg.d_model}")
    return model, estimator, to_tokens([digits], device)


def to_json_dict(est: Estimate) -> dict:
    """The first state of ``est`` as plain lists, in the probe's format."""
    return {"mi": est.mi[0].tolist(), "entropy": est.entropy[0].tolist(), "marginals": est.marginals[0].tolist(),
            "passes": 1, "seconds": est.seconds}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    device = pick_device(args.device)
    model, estimator, tokens = load(args.puzzle, args.model, args.estimator, device)
    estimate_mi(model, estimator, tokens)  # warm-up, so seconds measures the pass, not lazy initialisation
    runs = [estimate_mi(model, estimator, tokens) for _ in range(TIMED_RUNS)]
    est = runs[0]
    est.seconds = statistics.median(r.seconds for r in runs)  # one run can stall on a busy machine
    if args.json is not None:
        payload = {"domain": args.domain, "puzzle": to_string(tokens[0].cpu()), "device": str(device),
                   "model": args.model, "estimator": args.estimator, **to_json_dict(est)}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(payload) + "\n")
    mi = est.mi[0]
    i, j = divmod(int(mi.argmax()), mi.shape[0])
    print(f"estimated MI of {int(est.masked.sum())} masked positions in {1e3 * est.seconds:.1f} ms (1 pass)")
    print(f"largest MI {float(mi[i, j]):.4g} nats between positions {i} and {j}")
    return 0
