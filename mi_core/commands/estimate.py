"""``python -m mi_core estimate sudoku --puzzle STRING --json OUT``: pairwise MI from the neural estimator.

One forward pass of the Sudoku MDM plus the estimator head. The JSON has the same keys and layout as
``probe``'s for ``mi`` (81 x 81), ``entropy``, ``marginals``, ``passes`` and ``seconds`` (the median of
5 timed runs after a warm-up). The puzzle may
have several solutions (it is a state, not a puzzle to solve) but must not conflict or be unsolvable.

``python -m mi_core estimate protein --sequence TEXT [--model auto|mdm|esmc|PATH] [--estimator PATH] [--json OUT]``:
the same for one protein sequence (``_`` or ``X`` for masked residues; plain letters or one FASTA record),
N x N for N residues. ``--model auto`` is the MDM the estimator was trained on (named in its JSON) when that
file exists, else what ``mi_core.models.protein.load_protein_model`` loads for ``auto``; ``mdm``, ``esmc``
and paths go to that resolver. The estimator must have been trained on the chosen model's hidden states
(its hidden size is checked).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

from mi_core.device import pick_device
from mi_core.domains.sudoku import to_string, to_tokens, validate
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.estimator import Estimate, check_model_match, estimate_mi, load_estimator
from mi_core.options import ArgumentParser, add_force

DEFAULT_MODEL = "assets/sudoku_mdm.safetensors"
DEFAULT_ESTIMATOR = "assets/sudoku_mi_estimator.safetensors"
PROTEIN_ESTIMATOR = "assets/protein_mi_estimator.safetensors"
TIMED_RUNS = 5


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m mi_core estimate", description=__doc__.split("\n\n")[0])
    parser.add_argument("domain", choices=["sudoku", "protein"],
                        help="sudoku: the 9x9 MDM and its estimator; protein: see 'estimate protein -h'")
    parser.add_argument("--puzzle", required=True, help="grid string, row by row, '.' or '0' for blanks")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--model", default=DEFAULT_MODEL, help="Sudoku MDM weights (.safetensors + .json)")
    parser.add_argument("--estimator", default=DEFAULT_ESTIMATOR, help="estimator weights (.safetensors + .json)")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    add_force(parser)
    return parser


def load(puzzle: str, model_path: str, estimator_path: str, device: torch.device):
    """``(model, estimator, tokens (1, 81))``; raises SudokuError / ModelFileError / ValueError on bad input."""
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    digits, _ = validate(puzzle, size=None, require_unique=False)
    model = load_sudoku_mdm(model_path, device)
    if model.seq_len != len(digits):
        raise ValueError(f"the model {model_path} reads {model.seq_len} cells, the puzzle has {len(digits)}")
    estimator = load_estimator(estimator_path, device)
    check_model_match(model, estimator, f"the model {model_path}", f"the estimator {estimator_path}")
    return model, estimator, to_tokens([digits], device)


def to_json_dict(est: Estimate) -> dict:
    """The first state of ``est`` as plain lists, in the probe's format."""
    return {"mi": est.mi[0].tolist(), "entropy": est.entropy[0].tolist(), "marginals": est.marginals[0].tolist(),
            "passes": 1, "seconds": est.seconds}


def timed_estimate(model, estimator, tokens: torch.Tensor) -> Estimate:
    """:func:`estimate_mi` after a warm-up (so seconds measures the pass, not lazy initialisation); its
    ``seconds`` is the median of :data:`TIMED_RUNS` runs (one run can stall on a busy machine)."""
    estimate_mi(model, estimator, tokens)
    runs = [estimate_mi(model, estimator, tokens) for _ in range(TIMED_RUNS)]
    est = runs[0]
    est.seconds = statistics.median(r.seconds for r in runs)
    return est


def write_json(path: Path | None, payload: dict) -> None:
    if path is not None:
        atomic_write_json(path, payload, indent=None)


def build_protein_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(prog="python -m mi_core estimate protein",
                                     description="MI matrix of one protein sequence from the neural estimator")
    parser.add_argument("--sequence", required=True, help="amino-acid letters, '_' or 'X' for masked residues")
    parser.add_argument("--model", default="auto", help="auto (the MDM the estimator was trained on), mdm, esmc or a weights path")
    parser.add_argument("--estimator", default=PROTEIN_ESTIMATOR, help="estimator weights (.safetensors + .json)")
    parser.add_argument("--json", type=Path, default=None, help="write the result here as JSON")
    parser.add_argument("--device", default="auto", help="auto (CUDA when present), cpu or cuda")
    add_force(parser)
    return parser


def protein_model_spec(choice: str, estimator_path: str) -> str:
    """``--model`` for :func:`mi_core.models.protein.load_protein_model`, with ``auto`` read as the MDM the
    estimator was trained on (when that file is here; else the resolver's own ``auto``)."""
    if choice != "auto":
        return choice
    from mi_core.mi.estimator import load_estimator_meta

    trained_on = load_estimator_meta(estimator_path).get("mdm")
    return trained_on if trained_on and Path(trained_on).is_file() else "auto"


def load_protein(sequence: str, model_choice: str, estimator_path: str, device: torch.device):
    """``(model, estimator, tokens (1, N), model_path)``; ProteinInputError / ModelFileError / ValueError on
    bad input, a missing file or an estimator trained on another hidden size."""
    from mi_core.domains.protein import parse_text
    from mi_core.models.protein import load_protein_model

    records = parse_text(sequence)
    if len(records) != 1:
        raise ValueError(f"--sequence holds {len(records)} FASTA records; give one sequence")
    estimator = load_estimator(estimator_path, device)
    model, info = load_protein_model(protein_model_spec(model_choice, estimator_path), device)
    model_path = info.path
    if records[0].length > model.max_len:
        raise ValueError(f"the sequence has {records[0].length} residues, the model {model_path} takes at most "
                         f"{model.max_len}")
    check_model_match(model, estimator, f"the model {model_path}", f"the estimator {estimator_path}")
    return model, estimator, torch.as_tensor(records[0].tokens[None], device=device), model_path


def protein_main(argv: list[str]) -> int:
    from mi_core.domains.protein import detokenize

    args = build_protein_parser().parse_args(argv)
    check_output(args.json, args.force)
    device = pick_device(args.device)
    model, estimator, tokens, model_path = load_protein(args.sequence, args.model, args.estimator, device)
    est = timed_estimate(model, estimator, tokens)
    write_json(args.json, {"domain": "protein", "sequence": detokenize(tokens[0].cpu().numpy()), "device": str(device),
                           "model": display_path(model_path), "estimator": display_path(args.estimator), **to_json_dict(est)})
    report(est, first=1, unit="residues")
    return 0


def report(est: Estimate, first: int = 0, unit: str = "positions") -> None:
    """Two lines on stdout: how many masked positions in how long, and the strongest pair."""
    mi = est.mi[0]
    print(f"estimated MI of {int(est.masked.sum())} masked positions in {1e3 * est.seconds:.1f} ms (1 pass)")
    if not bool((mi > 0).any()):
        print("no pair of masked positions: every MI is 0")
        return
    i, j = divmod(int(mi.argmax()), mi.shape[0])
    print(f"largest MI {float(mi[i, j]):.4g} nats between {unit} {i + first} and {j + first}")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["protein"]:
        return protein_main(argv[1:])
    args = build_parser().parse_args(argv)
    check_output(args.json, args.force)
    device = pick_device(args.device)
    model, estimator, tokens = load(args.puzzle, args.model, args.estimator, device)
    est = timed_estimate(model, estimator, tokens)
    if args.json is not None:
        payload = {"domain": args.domain, "puzzle": to_string(tokens[0].cpu()), "device": str(device),
                   "model": display_path(args.model), "estimator": display_path(args.estimator), **to_json_dict(est)}
        write_json(args.json, payload)
    mi = est.mi[0]
    i, j = divmod(int(mi.argmax()), mi.shape[0])
    print(f"estimated MI of {int(est.masked.sum())} masked positions in {1e3 * est.seconds:.1f} ms (1 pass)")
    print(f"largest MI {float(mi[i, j]):.4g} nats between positions {i} and {j}")
    return 0
