"""What a plugin author reads of a command that serves their domain: ``bench-order DOMAIN --help`` on a domain
with the engine's default order benchmark printed a function's docstring (its indentation, "order_rows")."""

from __future__ import annotations

import pytest
from toy_domain import TOY

from mi_core import cli


@pytest.fixture
def toy():
    from mi_core.domain import register, unregister

    register(TOY)
    yield TOY
    unregister(TOY.key)


def test_bench_order_help_says_what_the_default_benchmark_runs(toy, capsys):
    assert cli.main(["bench-order", "toy6", "--help"]) == 0
    about = capsys.readouterr().out.split("options:")[0].split("\n\n", 1)[1]  # after the usage lines
    assert "order_rows" not in about and "\n    " not in about, about
    assert "bench-order toy6: the learned order against the step-budget heuristics" in about
    assert "random, top_prob and top_margin" in about and "--gammas" in about
