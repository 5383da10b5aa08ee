"""A strategy prepared for a model (estimator=shipped, selector=shipped) can still be pickled and copied, and the copy
reads its estimator or selector again for the model it is next prepared for."""

import copy

import cloudpickle
import pytest
import torch

from mi_core.decoding import make_strategy
from mi_core.models.loading import load_model


@pytest.fixture(scope="module")
def model():
    return load_model("assets/sudoku_peer_recurrent.safetensors")


@pytest.mark.parametrize("name, params", [("mi", {"estimator": "shipped"}), ("learned", {"selector": "shipped"})])
def test_prepared_strategy_pickles_and_reads_again(model, name, params):
    strategy = make_strategy(name, **params)
    strategy.prepare(model, torch.device("cpu"))
    for copied in (cloudpickle.loads(cloudpickle.dumps(strategy)), copy.deepcopy(strategy)):
        copied.prepare(model, torch.device("cpu"))  # read again: the copy's record names no model
        record = copied.__dict__["estimator_loaded" if name == "mi" else "selector_loaded"]
        assert record[0]() is model and record[2] == "shipped"
