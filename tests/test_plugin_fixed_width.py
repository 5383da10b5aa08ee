"""A fixed-length plugin whose state source gives a ``width`` (as a variable-length example does) still gets
fixed-length estimator data: no padding, no ``length`` tensor, and an estimator with position embeddings
(docs/architecture.md: a fixed length works with the estimator's position features)."""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from toy_domain import TOY, N, ToyStates

from mi_core import cli
from mi_core.domain import Domain


class WideToyStates(ToyStates):
    width = N  # what brackets' states give (their longest word), here the toy's one length


WIDE = Domain(**{f.name: getattr(TOY, f.name) for f in fields(TOY)} | {"states": WideToyStates})


@pytest.fixture
def wide():
    from mi_core.domain import register, unregister

    register(WIDE)
    yield WIDE
    unregister(WIDE.key)


def test_a_fixed_length_source_with_a_width_trains_position_embeddings(wide, tmp_path):
    from mi_core.train.estimator_data import load_shards

    data = tmp_path / "data"
    assert cli.main(["make-estimator-data", "toy6", "--out", str(data), "--states", "8", "--shard-size", "4"]) == 0
    shards, _ = load_shards(data)
    assert "length" not in shards and shards["tokens"].shape == (8, N)
    out = tmp_path / "est.safetensors"
    assert cli.main(["train-estimator", "--data", str(data), "--out", str(out), "--steps", "4", "--eval-every", "2",
                     "--variants", "log:free", "--batch", "4"]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["config"]["n_positions"] == N
