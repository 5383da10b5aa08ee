"""Real checks of the shipped Sudoku MDM weights (they must be in assets/)."""

import json
from pathlib import Path

import torch

from mi_core.decoding import decode_final, make_strategy
from mi_core.domains.sudoku import to_tokens
from mi_core.domains.sudoku_gen import random_puzzle
from mi_core.models.sudoku_mdm import load_sudoku_mdm

SHIPPED = Path("assets/sudoku_mdm.safetensors")


def test_shipped_config_and_summary():
    meta = json.loads(SHIPPED.with_suffix(".json").read_text())
    assert meta["config"]["d_model"] > 0 and meta["params"] > 100_000
    assert meta["curve"], "the training curve is stored beside the weights"


def test_shipped_model_solves_easy_puzzles():
    model = load_sudoku_mdm(SHIPPED)
    pairs = [random_puzzle(40, seed) for seed in range(8)]  # generated, 40 clues: easy
    tokens = to_tokens([p for p, _ in pairs])
    solutions = torch.tensor([s for _, s in pairs])
    final = decode_final(model, tokens, make_strategy("sequential"))
    assert (final.tokens == tokens)[tokens != 0].all()
    assert (final.tokens == solutions).all(1).sum() == 8
