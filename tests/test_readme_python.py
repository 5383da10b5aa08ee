"""The README's "From Python" block runs as printed, and does what its comments say."""

import re
from pathlib import Path

import torch

README = Path(__file__).resolve().parent.parent / "README.md"


def python_block() -> str:
    section = README.read_text().split("### From Python", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S)[1]


def test_the_readme_python_block_probes_estimates_and_solves(capsys):
    names: dict = {}
    exec(compile(python_block(), "README.md (From Python)", "exec"), names)
    exact, guess, last, sudoku = names["exact"], names["guess"], names["last"], names["sudoku"]
    assert exact.mi.shape == (81, 81) and torch.allclose(exact.mi, exact.mi.T) and exact.passes == 505
    assert guess.mi.shape == (1, 81, 81) and exact.entropy.shape == (81,)
    solution = sudoku.state_text(last.tokens[0])
    assert sudoku.solution(sudoku.parse_input(names["puzzle"])) == sudoku.parse_input(solution)
    assert last.passes.tolist() == [4]  # as the comment says
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == f"{solution} [4]"


def test_the_readme_python_block_runs_on_a_gpu_as_its_comment_says():
    """The block says device="cuda" for a GPU: its tokens and estimator were made on the CPU, so probe named the
    tokens' device and estimate_mi failed inside the head. Every tensor it makes and loads goes to model.device."""
    lines = python_block().splitlines()
    made = [line for line in lines if "torch.tensor(" in line or "load_estimator(" in line]
    assert len(made) == 2 and all("device=model.device" in line for line in made)
