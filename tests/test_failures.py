"""The failure diagnosis: unit geometry, first-error classes and the cross-tab against sequential."""

import torch

from mi_core.decoding import make_strategy
from mi_core.domains.sudoku import SUDOKU9
from mi_core.domains.sudoku.diagnose import summarise, trace
from mi_core.domains.sudoku.generator import random_puzzle


def test_unit_matrix_has_twenty_peers_per_cell():
    same = SUDOKU9.peers()
    assert same.shape == (81, 81) and (same == same.T).all() and not same.diagonal().any()
    assert (same.sum(1) == 20).all()


def test_summarise_cross_tab():
    err = {"class": "alone", "step": 3, "step_size": 1, "clash": False}
    dep = {"class": "with_dependent", "step": 1, "step_size": 4, "clash": True}
    seq = [{"solved": True, "passes": 50, "first_error": None}, {"solved": False, "passes": 50, "first_error": err},
           {"solved": True, "passes": 50, "first_error": None}]
    other = [{"solved": False, "passes": 10, "first_error": dep}, {"solved": True, "passes": 10, "first_error": None},
             {"solved": True, "passes": 10, "first_error": None}]
    s = summarise("x", other, seq)
    assert (s["lost"], s["gained"], s["both_fail"]) == (1, 1, 0)
    assert s["lost_first_error"] == {"alone": 0, "with_dependent": 1, "with_independent": 0, "clash": 1}
    assert s["accuracy"] == 2 / 3 and s["mean_passes"] == 10


def test_trace_classes(tiny_mdm):
    """A tiny random model makes errors: sequential's are always alone, one-step top-81's never are."""
    model = tiny_mdm.eval()
    pairs = [random_puzzle(26, seed) for seed in range(6)]
    tokens = torch.tensor([p for p, _ in pairs])
    target = torch.tensor([s for _, s in pairs])
    for row in trace(model, tokens, target, make_strategy("sequential"), bf16=False):
        assert row["solved"] == (row["first_error"] is None)
        if row["first_error"]:
            assert row["first_error"]["class"] == "alone" and row["first_error"]["step_size"] == 1
    for row in trace(model, tokens, target, make_strategy("topk", k=81), bf16=False):
        assert row["passes"] == 1
        assert row["first_error"] is not None  # a random model does not solve a 26-clue puzzle
        if row["first_error"]:  # every blank written in one step: errors always have dependent company
            assert row["first_error"]["class"] == "with_dependent"


def test_trace_of_grids_with_nothing_to_decode(tiny_mdm):
    """Puzzles already full (a file of solved grids) are solved in 0 passes, as ``bench`` scores them."""
    _, solution = random_puzzle(30, 0)
    tokens = torch.tensor([solution, solution])
    rows = trace(tiny_mdm.eval(), tokens, tokens.clone(), make_strategy("topk", k=2), bf16=False)
    assert rows == [{"solved": True, "passes": 0, "first_error": None}] * 2
