"""The engine's pieces a sequence domain used to write by hand: ``DomainMDM`` (its MDM class, save, load and
``model_loader``) and ``uniform_mask`` (a state masked at a rate t ~ U(0, 1)). Each must write, read and draw
exactly what the hand-written code did, so shipped weights, old checkpoints and estimator-data shards stay valid."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core.domain import Domain, register, uniform_mask, unregister
from mi_core.models.base import load_checked, save_model
from mi_core.models.mdm import DomainMDM, SequenceMDM, SequenceMDMConfig

ROOT = Path(__file__).resolve().parents[1]
TINY = SequenceMDMConfig(max_len=12, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.0)
EXTRA = {"train": {"seed": 0, "steps": 3}, "params": 123, "data": {"train": 5, "val": 2}}


def meta_of(path: Path) -> list:
    """The JSON beside ``path`` as ordered (key, value) pairs, less the ``save_id`` each save draws afresh."""
    return [(k, v) for k, v in json.loads(path.with_suffix(".json").read_text()).items() if k != "save_id"]


@pytest.mark.parametrize("key,values,mask_id,pad_id", [("brackets", 4, 0, 5), ("protein", 20, 0, 21)])
def test_it_saves_what_the_hand_written_save_wrote(tmp_path, key, values, mask_id, pad_id):
    """The JSON (same keys in the same order: config, domain, kind, the trainer's extra) and the weights."""

    class Hand(SequenceMDM):
        pass

    Hand.values, Hand.mask_id, Hand.pad_id = values, mask_id, pad_id
    mdm = DomainMDM(key, values=values, mask_id=mask_id, pad_id=pad_id)
    torch.manual_seed(0)
    model = mdm.model_cls(TINY)
    mdm.save(model, tmp_path / "new.safetensors", EXTRA)
    save_model(model, model.cfg, tmp_path / "old.safetensors", {"kind": f"{key}_mdm", **EXTRA}, domain=key)
    assert meta_of(tmp_path / "new.safetensors") == meta_of(tmp_path / "old.safetensors")
    assert [k for k, _ in meta_of(tmp_path / "new.safetensors")] == ["config", "domain", "kind", *EXTRA]
    old = load_checked(SequenceMDMConfig, Hand, tmp_path / "old.safetensors", "cpu", "an MDM")[0]
    new = mdm.load(tmp_path / "new.safetensors")
    assert type(new) is mdm.model_cls and new.cfg == old.cfg and new.weights_path == tmp_path / "new.safetensors"
    assert all(torch.equal(a, b) for a, b in zip(new.state_dict().values(), old.state_dict().values()))
    assert (new.values, new.mask_id, new.pad_id, new.n_values) == (values, mask_id, pad_id, values)


@pytest.fixture
def brackets():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        yield importlib.import_module("brackets")
    finally:
        unregister("brackets")
        sys.path.remove(str(ROOT / "examples"))


def test_the_shipped_brackets_and_protein_weights_load_through_it(brackets):
    from mi_core.domains.protein.mdm import PROTEIN_MDM, ProteinMDM, load_protein_mdm

    tokens = torch.tensor([[1, 0, 0, 2, 3, 0, 0, 4]])
    model, description = brackets.MDM.loader(None, "cpu")
    assert description == f"the brackets MDM {brackets.DEFAULT_MODEL}" and model.weights_path == Path(brackets.DEFAULT_MODEL)
    assert brackets.BracketsTask.model_cls is type(model) and brackets.BracketsTask.save == brackets.MDM.save
    assert brackets.BracketsOrder().load == brackets.MDM.load and not model.training

    class Hand(SequenceMDM):
        values, mask_id, pad_id = 4, 0, 5

    hand = load_checked(SequenceMDMConfig, Hand, brackets.DEFAULT_MODEL, "cpu", "a brackets MDM")[0]
    with torch.no_grad():
        assert torch.equal(model(tokens).logits, hand(tokens).logits)
    protein = load_protein_mdm(ROOT / "assets" / "protein_mdm.safetensors")
    assert type(protein) is ProteinMDM is PROTEIN_MDM.model_cls and protein.n_values == 20


def test_a_plugin_built_on_it_registers_trains_and_loads(tmp_path):
    """A domain whose model parts are one ``DomainMDM``: the trainer's task, the loader, ``load_model`` from the
    domain recorded in the file."""
    from mi_core.models.loading import load_model_described
    from mi_core.train.sequences import SequenceTask

    mdm = DomainMDM("seq_lab", values=3, mask_id=0, pad_id=4, name="lab MDM")

    @dataclass
    class NoOptions:
        pass

    class LabTask(SequenceTask):
        name, model_cls, save, options = "seq_lab_mdm", mdm.model_cls, mdm.save, NoOptions

        def read_data(self, args, cfg, log):
            return [np.array([1, 2, 3])] * 4, [np.array([3, 2, 1])], {"train": 4, "val": 1}

    domain = register(Domain("seq_lab", "Lab sequences", "seq_lab", ("x", "y", "z"), pad_id=4,
                             model_loader=mdm.loader, trainer=LabTask))
    try:
        path = tmp_path / "lab.safetensors"
        LabTask.save(LabTask.model_cls(TINY), path, {"params": 1})
        model, description = load_model_described(path)
        assert type(model) is mdm.model_cls and model.domain == "seq_lab" and description == f"the lab MDM {path}"
        assert json.loads(path.with_suffix(".json").read_text())["kind"] == "seq_lab_mdm"
        with pytest.raises(ValueError, match="the seq_lab domain ships no lab MDM: give --model FILE"):
            load_model_described(domain=domain)
    finally:
        unregister("seq_lab")


@pytest.mark.parametrize("kwargs,message", [
    ({"values": 0}, "mask_id 0 and pad_id 5 must differ from each other and from the value tokens 1..0"),
    ({"mask_id": 2}, "mask_id 2 and pad_id 5 must differ .* value tokens 1..4"),
    ({"pad_id": 0}, "mask_id 0 and pad_id 0 must differ"),
    ({"values": "4"}, "values and ids must be integers >= 0, got values '4'"),
    ({"pad_id": -1}, "got pad_id -1"),
    ({"domain": ""}, "domain must be the domain's key, got ''"),
])
def test_a_vocabulary_that_cannot_work_is_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        DomainMDM(**{"domain": "mine", "values": 4, "mask_id": 0, "pad_id": 5, **kwargs})


def hand_written_mask(word: np.ndarray, rng: np.random.Generator, minimum: int) -> np.ndarray:
    """The masker brackets, the Petersen plugin, proteins and Sudoku each wrote (token 0 masked)."""
    mask = rng.random(len(word)) < rng.random()
    short = minimum - int(mask.sum())
    if short > 0:
        mask[rng.choice(np.flatnonzero(~mask), size=short, replace=False)] = True
    return np.where(mask, 0, word)


@pytest.mark.parametrize("length,minimum", [(8, 2), (16, 3), (81, 10), (5, 5), (1, 1)])
def test_uniform_mask_draws_as_the_hand_written_maskers_did(length, minimum):
    words = np.random.default_rng(length).integers(1, 5, size=(50, length))
    old, new = np.random.default_rng(minimum), np.random.default_rng(minimum)
    for word in words:
        expected = hand_written_mask(word, old, minimum)
        got = uniform_mask(word, new, minimum, 0)
        assert np.array_equal(got, expected) and got.dtype == expected.dtype
        assert int((got == 0).sum()) >= minimum
    assert old.random() == new.random()  # the same numbers drawn, so what follows is drawn alike too


def test_uniform_mask_masks_all_of_a_state_shorter_than_its_minimum():
    """The hand-written maskers raised numpy's "Cannot take a larger sample than population" here."""
    assert uniform_mask(np.array([1, 2, 3]), np.random.default_rng(0), 5, 9).tolist() == [9, 9, 9]


def test_a_domain_built_on_it_pickles(brackets):
    """A worker process gets a pickled copy of a Domain: the generated model class was looked up by name in
    mi_core.models.mdm and pickle failed ("attribute lookup BracketsMDM ... failed")."""
    import pickle

    copy = pickle.loads(pickle.dumps(brackets.BRACKETS))
    model, description = copy.model_loader(None, "cpu")
    assert description == f"the brackets MDM {brackets.DEFAULT_MODEL}" and type(model).__name__ == "BracketsMDM"
