"""Grow a recurrent Sudoku MDM into more blocks of the same width: a block applied L times becomes B copies of
it applied L / B times (the same block applications a pass, B times the parameters), a warm start for training
the copies apart (the chain's phase 9, docs/sudoku_training.md).

    PYTHONPATH=. python scripts/studies/grow_blocks.py checkpoints/sudoku_chain/soup3.safetensors --blocks 2 \\
        --out checkpoints/sudoku_chain/grown2.safetensors

Not the same function: the input embedding is re-added before each iteration (``inject``), so once every B block
applications instead of every one. Answered: whether 2x the parameters at the same compute trains past the soup.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig
from mi_core.io import display_path, file_sha256
from mi_core.models.base import load_checked, save_model


def grow(path: Path, blocks: int) -> tuple[SudokuMDM, SudokuMDMConfig]:
    small, config = load_checked(SudokuMDMConfig, SudokuMDM, path, "cpu", "a Sudoku MDM")
    if config.n_layers != 1 or config.loops % blocks:
        raise SystemExit(f"error: {path}: needs one block and iterations ({config.loops}) divisible by {blocks}")
    config = dataclasses.replace(config, n_layers=blocks, loops=config.loops // blocks)
    big, source = SudokuMDM(config), small.state_dict()
    state = {}
    for key in big.state_dict():
        if key.startswith("blocks."):
            state[key] = source["blocks.0." + key.split(".", 2)[2]].clone()
        elif key == "peer_gain":
            state[key] = source[key].repeat(blocks, 1)
        else:
            state[key] = source[key].clone()
    big.load_state_dict(state)
    return big, config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--blocks", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    model, config = grow(args.model, args.blocks)
    record = json.loads(args.model.with_suffix(".json").read_text())
    extra = {"grown": {"from": display_path(args.model), "sha256": file_sha256(args.model), "blocks": args.blocks}}
    save_model(model, config, args.out, extra=extra, domain=record.get("domain"))
    print(f"{args.out}: {args.blocks} blocks applied {config.loops} times, {model.num_params():,} parameters")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
