"""A researcher's own domain, written from the docs alone, and the mistakes such an author makes: each is refused
with one line naming what is wrong (never a traceback), and a fixed-length domain over the engine's sequence MDM
(which reads any length) gets what a grid domain gets: its estimator in the app, ``--views``."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest
import torch
from toy_domain import TOY, ToyMDM, ToyStates

from mi_core.domain import ShardConfig, register, unregister
from mi_core.models.mdm import DomainMDM, SequenceMDM, SequenceMDMConfig

EVAL_DEFAULTS = ToyStates.eval_defaults
SMALL = SequenceMDMConfig(max_len=6, d_model=8, n_layers=1, n_heads=2, d_ff=8, dropout=0.0)
LAB = DomainMDM("toy_lab", values=6, mask_id=0, pad_id=7)  # toy_like()'s model files: the toy's vocabulary


def toy_like(**parts):
    return dataclasses.replace(TOY, key="toy_lab", names=("toy_lab",), short="toy_lab", **parts)


def register_fails(domain) -> str:
    try:
        with pytest.raises(ValueError) as err:
            register(domain)
    finally:
        unregister(domain.key)
    return str(err.value)


def test_a_part_that_lacks_a_member_is_refused_as_it_registers():
    """Before: the domain registered, and the command that reached the missing member died in a traceback
    (AttributeError, or NotImplementedError from a base class's stub)."""
    from mi_core.train.sequences import SequenceTask

    class NoCompute:
        def __init__(self, solutions, levels=None, mask_id=0):
            pass

        def update(self, index, start, final, passes, extra=0):
            pass

    assert "its metric (NoCompute) lacks compute" in register_fails(toy_like(metric=NoCompute))

    class Bare(SequenceTask):  # neither save nor read_data
        name, model_cls, options = "bare", ToyMDM, object

    message = register_fails(toy_like(trainer=Bare))
    assert message == ("domain toy_lab: its trainer (Bare) lacks save, read_data (docs/architecture.md, "
                       "'The domain seam')")

    class NoEvalDefaults(ToyStates):
        pass

    del ToyStates.eval_defaults  # restored below: the toy's own source is shared by the other tests
    try:
        assert "its states (NoEvalDefaults) lacks eval_defaults" in register_fails(toy_like(states=NoEvalDefaults))
    finally:
        ToyStates.eval_defaults = EVAL_DEFAULTS


def test_an_order_task_without_its_splits_is_refused():
    from mi_core.order.sequences import SequenceOrderTask

    class Half(SequenceOrderTask):
        domain = "toy_lab"

        def load(self, path, device):
            return None

        def save_denoiser(self, model, path, meta):
            pass

    assert "its order_task (Half) lacks splits" in register_fails(toy_like(order_task=Half()))


def test_a_part_given_as_an_instance_where_the_engine_builds_a_class_or_the_other_way_is_refused():
    """The docs did not say which parts are classes: before, a metric instance was a TypeError ("the first argument
    must be callable") in the middle of bench, an order_task class one in train-order ("OrderTask.run() missing 1
    required positional argument: 'device'")."""
    from toy_domain import AllDifferentMetric, ToyOrderTask

    message = register_fails(toy_like(metric=AllDifferentMetric([])))
    assert "its metric is a AllDifferentMetric instance: give the class, the engine builds it" in message
    message = register_fails(toy_like(states=ToyStates(None)))
    assert "its states is a ToyStates instance: give the class" in message
    message = register_fails(toy_like(order_task=ToyOrderTask))
    assert "its order_task is the class ToyOrderTask: give an instance, ToyOrderTask()" in message


@pytest.mark.parametrize("fields,match", [
    ({"mask_id": 1}, "mask_id 1 is the token of the value 'a' (value v is token v + 1, 1..6)"),
    ({"pad_id": 6}, "pad_id 6 is the token of the value 'f'"),
    ({"mask_id": 7, "pad_id": 7}, "mask_id and pad_id are both 7"),
    ({"mask_id": 0.0}, "mask_id must be an int, got 0.0"),
    ({"length": "6"}, "length must be an int, got '6'"),
    ({"alphabet": ("a", "_", "c")}, "the value '_' would read as masked"),
    ({"alphabet": ("a", ".", "c")}, "the value '.' would read as masked"),
    ({"names": ("toy_lab")}, "names must be a tuple of strings, got the string 'toy_lab': write ('toy_lab',)"),
    ({"examples": ("two masked", "ab__ef")}, "examples must be a tuple of (name, state text) pairs"),
    ({"strategy_defaults": (("mi", "gamma"),)}, "strategy_defaults must be a tuple of (strategy, parameter, value)"),
    ({"nouns": "cell"}, "nouns must be (position noun, value noun), got 'cell'"),
])
def test_a_domain_whose_ids_clash_is_refused(fields, match):
    """Before: each was accepted: a mask id that is also a value's token read that value as masked, a '_' value
    read as masked, a float mask id made float token tensors that the probe refused without naming the cause;
    names=("toy_lab") registered the names t, o, y, _, l, a, b (the command-line name 't'), and a flat examples pair
    was a "too many values to unpack" in the app."""
    with pytest.raises(ValueError, match=re.escape(f"domain toy_lab: {match}")):
        dataclasses.replace(toy_like(), **fields)


def test_registering_a_domain_again_names_replace():
    """A notebook cell run twice registers its domain again: before, "domain name 'toy_lab' is already registered"
    said nothing of register(..., replace=True)."""
    domain = toy_like()
    register(domain)
    try:
        with pytest.raises(ValueError, match=re.escape("domain name 'toy_lab' is already registered (register(domain, "
                                                       "replace=True) replaces it)")):
            register(toy_like())
        assert register(toy_like(), replace=True).key == "toy_lab"
        with pytest.raises(ValueError, match="domain name 'protein' is already registered$"):  # another's: no hint
            register(dataclasses.replace(domain, key="protein", short="protein_lab", names=()))
    finally:
        unregister(domain.key)


@pytest.mark.parametrize("build,match", [
    (lambda: ToyMDM(dataclasses.replace(SMALL, d_model=8.0)), "d_model must be an integer, got 8.0"),
    (lambda: SequenceMDMConfig(n_layers="2"), "n_layers must be an integer, got '2'"),
    (lambda: SequenceMDMConfig(dropout=1.5), "dropout: 1.5 is outside the accepted range 0..0.99"),
    (lambda: ShardConfig(states=2.5), "states must be an integer, got 2.5"),
    (lambda: ShardConfig(eps="0"), "eps must be a number, got '0'"),
])
def test_a_config_built_in_code_names_a_field_of_the_wrong_type(build, match):
    """Before: d_model=8.0 was torch's TypeError "empty(): argument 'size' failed to unpack the object ...",
    n_layers="2" a TypeError comparing str and int, dropout=1.5 torch's own complaint; states=2.5 was kept."""
    with pytest.raises(ValueError, match=re.escape(match)):
        build()


def test_a_parts_properties_are_not_run_as_it_registers():
    """The check of a part's members ran every property of an instance part, twice, at import: one that builds its
    data on first use was built there, and one that cannot yet (here a RuntimeError) stopped the module loading with
    a traceback, though the domain gives every member."""
    from toy_domain import ToyOrderTask

    built = []

    class Lazy(ToyOrderTask):
        @property
        def pool(self):
            built.append(1)
            raise RuntimeError("the pool is built on first use")

    domain = toy_like(order_task=Lazy())
    register(domain)
    unregister(domain.key)
    assert built == []


def test_a_loader_returning_a_bare_model_is_named():
    """Before: TypeError: cannot unpack non-iterable ... object."""
    from mi_core.models.loading import load_model

    domain = toy_like(model_loader=lambda spec, device: ToyMDM(SMALL))
    register(domain)
    try:
        with pytest.raises(ValueError, match=f"model_loader returned {ToyMDM.__name__}, not \\(model, description\\)"):
            load_model(domain="toy_lab")
    finally:
        unregister(domain.key)


def test_a_loader_returning_load_checkeds_pair_as_its_model_is_named():
    """load_checked returns (model, cfg): a loader that gave that pair as its model read "model_loader returned tuple,
    not (model, description)", though it had returned a tuple."""
    from mi_core.models.loading import load_model

    domain = toy_like(model_loader=lambda spec, device: ((ToyMDM(SMALL), SMALL), "a toy"))
    register(domain)
    try:
        with pytest.raises(ValueError, match=r"model_loader returned \(tuple, str\), not \(model, description\): .*"
                                             r"load_checked returns \(model, cfg\)"):
            load_model(domain="toy_lab")
    finally:
        unregister(domain.key)


def test_a_sequence_mdm_without_its_vocabulary_is_named():
    """Before: AttributeError: 'NoPad' object has no attribute 'pad_id'."""

    class NoPad(SequenceMDM):
        values = 4

    with pytest.raises(ValueError, match="NoPad does not set pad_id: a SequenceMDM subclass names its vocabulary"):
        NoPad(SMALL)


def test_weights_recording_a_domain_not_registered_here_are_refused(tmp_path):
    """Before: a file trained for a plugin domain that is not loaded (here 'brackets', four values like the toy's
    model) was read by another domain's loader of the same config class, and its MI shown as the other domain's."""
    from mi_core.models.base import ModelFileError, save_model
    from mi_core.models.loading import load_model

    path = tmp_path / "other.safetensors"
    save_model(ToyMDM(SMALL), SMALL, path, {}, domain="someone_elses")
    domain = toy_like(model_loader=LAB.loader)
    register(domain)
    try:
        with pytest.raises(ModelFileError, match="is a model for the domain 'someone_elses' .*no domain "
                                                 "'someone_elses' is registered here"):
            load_model(path, domain="toy_lab")
        LAB.save(LAB.model_cls(SMALL), path)
        assert load_model(path, domain="toy_lab").domain == "toy_lab"
    finally:
        unregister(domain.key)


def test_views_average_a_sequence_mdm_on_a_fixed_length_domain():
    """Before: ``--views`` refused the engine's sequence MDM (``seq_len`` None) on a domain of fixed length ("views
    of 6 positions ... do not fit a model of None positions"); the symmetries may be NumPy arrays."""
    from mi_core.models.views import Views

    torch.manual_seed(0)
    model = ToyMDM(SMALL).eval()
    positions = np.stack([np.arange(6), np.arange(6)[::-1]])
    values = np.stack([np.arange(6), np.arange(6)])
    views = Views(model, positions, values)
    assert (views.seq_len, views.max_len) == (6, 6)
    tokens = torch.tensor([[1, 0, 0, 0, 0, 2]])
    with torch.no_grad():
        got = views(tokens).logits
        one = model(tokens).logits.log_softmax(-1)
        flipped = model(tokens.flip(1)).logits.log_softmax(-1).flip(1)
    torch.testing.assert_close(got, (one + flipped) / 2)
    with pytest.raises(ValueError, match="views of 6 positions, a state of 5"):
        views(tokens[:, :5])


def test_the_app_reads_a_fixed_length_estimator_of_a_sequence_mdm(tmp_path):
    """Before: the app refused the estimator ``train-estimator`` made for such a domain ("it was trained on a fixed
    length of 6 positions; sequences vary in length") and probed every map instead; the command line used it."""
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator
    from mi_lens_app.core import estimator_mismatch

    model = ToyMDM(SMALL).eval()
    estimator = MIEstimator(EstimatorConfig(d_in=8, n_values=6, n_positions=6))
    assert estimator_mismatch(model, estimator, toy_like()) is None
    other = MIEstimator(EstimatorConfig(d_in=8, n_values=6, n_positions=7))
    assert estimator_mismatch(model, other, toy_like()) == "it was trained on 7 positions, this domain has 6"
    varying = toy_like(length=None)
    assert "sequences vary in length" in estimator_mismatch(model, estimator, varying)


def test_bench_with_views_on_a_plugin_sequence_domain(tmp_path):
    """The command line end to end: a fixed-length domain over the engine's MDM, with symmetries, decodes with
    ``--views 2`` and records them."""
    from mi_core import cli

    path = tmp_path / "m.safetensors"
    torch.manual_seed(0)
    LAB.save(LAB.model_cls(SMALL), path)

    def symmetries(count, seed):
        return np.stack([np.arange(6), np.arange(6)[::-1]])[:count], np.tile(np.arange(6), (count, 1))

    register(toy_like(model_loader=LAB.loader, symmetries=symmetries))
    states = tmp_path / "states.txt"
    states.write_text("ab____ abcdef\n______ fedcba\n")
    out = tmp_path / "bench.json"
    try:
        assert cli.main(["bench", "toy_lab", "--model", str(path), "--puzzles", str(states), "--views", "2",
                         "--json", str(out)]) == 0
    finally:
        unregister("toy_lab")
    assert json.loads(out.read_text())["views"] == 2


@pytest.mark.parametrize("argv,why,serving", [
    (["train-order"], "has no order task (a Domain's order_task)", "sudoku, protein"),
    (["train", "--help"], "has no trainer (a Domain's trainer)", "sudoku, protein"),
    (["bench"], "has no metric (a Domain's metric)", "sudoku"),
    (["sweep"], "has no metric (a Domain's metric)", "sudoku"),
    (["bench-order"], "has neither an order bench nor a metric (a Domain's order_bench, metric)", "sudoku"),
    (["make-estimator-data"], "has no state source (a Domain's states)", "sudoku, protein"),
    (["eval-estimator"], "has no held-out states (a Domain's states with held_out)", "sudoku, protein"),
    (["diagnose"], "has no diagnose command (the sudoku domain's own)", "sudoku"),
])
def test_a_command_a_registered_domain_cannot_run_says_why(capsys, argv, why, serving):
    """Before: argparse's "invalid choice: 'toy_lab' (choose from 'sudoku', 'sudoku9', 'protein')", no reason."""
    from mi_core import cli

    register(toy_like(order_task=None, trainer=None, metric=None, states=None))
    try:
        assert cli.main([argv[0], "toy_lab", *argv[1:]]) == 2
    finally:
        unregister("toy_lab")
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {argv[0]}: the toy_lab domain {why}; it serves ") and "\n" not in err
    assert all(name in err.split("; it serves ")[1].split(", ") for name in serving.split(", "))


def test_a_plugin_command_that_refuses_a_domain_says_why(capsys):
    """Before: a domain's own Command had no field for why, and its ``serves`` refusing a domain printed "is not
    one this command serves (its serves(domain) is false)"."""
    from mi_core import cli
    from mi_core.domain import Command

    def options(domain):
        return []

    command = Command("toy-count", "count a sequence domain's values", lambda args: 0, options,
                      serves=lambda d: d.layout == "sequence", UNSERVED="is a grid, not a sequence")
    register(toy_like(commands=(command,)))
    try:
        assert cli.main(["toy-count", "sudoku"]) == 2
    finally:
        unregister("toy_lab")
    err = capsys.readouterr().err
    assert err.startswith("error: toy-count: the sudoku domain is a grid, not a sequence; it serves ")
    assert "toy_lab" in err.split("; it serves ")[1] and "\n" not in err.strip()


def test_generate_names_a_grid_domain_and_a_length_its_fixed_length_domain_has_not(tmp_path, capsys):
    """Before: ``generate toy_lab --length 5`` on a domain of 6 positions over the engine's MDM (which reads any
    length) printed states of 5; a grid domain was argparse's "invalid choice: 'sudoku'"."""
    from mi_core import cli

    path = tmp_path / "m.safetensors"
    cfg = dataclasses.replace(SMALL, max_len=16)
    LAB.save(LAB.model_cls(cfg), path)
    register(toy_like(model_loader=LAB.loader))
    try:
        for length in (5, 12):
            assert cli.main(["generate", "toy_lab", "--length", str(length), "--model", str(path), "--n", "1"]) == 2
            assert capsys.readouterr().err == (f"error: --length {length}: a {TOY.label} state has 6 positions; "
                                               "give --length 6\n")
        assert cli.main(["generate", "toy_lab", "--length", "6", "--model", str(path), "--n", "1"]) == 0
        assert "length=6" in capsys.readouterr().out
        assert cli.main(["generate", "toy_lab", "--model", str(path), "--n", "1"]) == 0  # its one length by default
        assert "length=6" in capsys.readouterr().out
    finally:
        unregister("toy_lab")
    assert cli.main(["generate", "sudoku", "--length", "81"]) == 2
    assert capsys.readouterr().err.startswith('error: generate: the sudoku domain is a grid, not a sequence '
                                              '(generate fills domains whose layout is "sequence"); it serves ')


def test_a_domains_estimator_file_not_made_yet_is_named_with_how_to_make_it(tmp_path, capsys, monkeypatch):
    """Before: a plugin naming its estimator file before training one got ``estimate``'s "weights file not found:
    PATH" and ``bench --sampler mi``'s "needs an MI estimator ...: --set estimator=PATH", with no word that its own
    file (or its variable's) was missing nor how to make it."""
    from mi_core import cli

    path, states, absent = tmp_path / "m.safetensors", tmp_path / "states.txt", tmp_path / "est.safetensors"
    LAB.save(LAB.model_cls(SMALL), path)
    states.write_text("ab____\n")
    monkeypatch.delenv("MI_LENS_TOY_LAB_ESTIMATOR", raising=False)
    register(toy_like(model_loader=LAB.loader, estimator_env="MI_LENS_TOY_LAB_ESTIMATOR", estimator_default=str(absent)))
    made = (f"the {TOY.label} domain's estimator {absent} (its estimator_default) does not exist yet: make it with "
            f"python -m mi_core make-estimator-data toy_lab --out DIR, then python -m mi_core train-estimator --data "
            f"DIR --out {absent}")
    try:
        assert cli.main(["estimate", "toy_lab", "--model", str(path), "--state", "ab____"]) == 2
        assert capsys.readouterr().err == f"error: {made}; or give --estimator FILE\n"
        assert cli.main(["bench", "toy_lab", "--model", str(path), "--puzzles", str(states), "--sampler", "mi",
                         "--json", str(tmp_path / "b.json")]) == 2
        assert capsys.readouterr().err.strip().endswith(f"--set estimator=PATH ({made})")
        monkeypatch.setenv("MI_LENS_TOY_LAB_ESTIMATOR", str(tmp_path / "typo.safetensors"))
        assert cli.main(["estimate", "toy_lab", "--model", str(path), "--state", "ab____"]) == 2
        assert "typo.safetensors ($MI_LENS_TOY_LAB_ESTIMATOR) does not exist yet" in capsys.readouterr().err
    finally:
        unregister("toy_lab")


def test_bench_orders_note_on_skipped_eb_and_mi_rows_names_where_a_domain_gives_their_gamma(capsys):
    """Before: "names no eb / mi budget: those rows are skipped", with no word of which Domain field names one."""
    from types import SimpleNamespace

    from mi_core.bench.order import default_gammas

    assert default_gammas(SimpleNamespace(gammas=None), TOY) == {}
    assert "(a gamma in its strategy_defaults)" in capsys.readouterr().err
    tuned = dataclasses.replace(TOY, strategy_defaults=(("mi", "gamma", 2.0),))
    assert default_gammas(SimpleNamespace(gammas=None), tuned) == {"mi": [2.0]}


def test_a_domain_with_a_rule_check_takes_its_metric_from_it(tmp_path):
    """Before: a domain that gives ``verify`` (for ``--attempts``) wrote a metric class again around the same check
    (brackets' WellNestedMetric, a plugin's own); ``VerifiedMetric`` with its ``verify`` is the metric, and one
    without a ``verify`` is refused as it registers."""
    from mi_core import cli
    from mi_core.bench.metrics import VerifiedMetric

    def all_different(start, final):
        given = start != 0
        return bool((final[given] == start[given]).all() and len(set(final.tolist())) == len(final) and final.all())

    class AllDifferent(VerifiedMetric):
        verify = staticmethod(all_different)

    metric = AllDifferent()
    metric.update(0, np.array([1, 0, 0]), np.array([1, 2, 3]), 2)
    metric.update(1, np.array([1, 0, 0]), np.array([1, 2, 2]), 4, extra=1)
    assert metric.compute() == {"n": 2, "accuracy": 0.5, "mean_passes": 3.0, "passes_min": 2, "passes_median": 3.0,
                                "passes_max": 4, "mean_extra_passes": 0.5}
    assert "its metric (VerifiedMetric) lacks verify" in register_fails(toy_like(metric=VerifiedMetric))

    path, states, out = tmp_path / "m.safetensors", tmp_path / "states.txt", tmp_path / "b.json"
    LAB.save(LAB.model_cls(SMALL), path)
    states.write_text("ab____\n")
    register(toy_like(model_loader=LAB.loader, metric=AllDifferent))
    try:
        assert cli.main(["bench", "toy_lab", "--model", str(path), "--puzzles", str(states), "--json", str(out)]) == 0
    finally:
        unregister("toy_lab")
    assert json.loads(out.read_text())["n"] == 1


def test_bench_orders_note_on_skipped_learned_rows_names_the_domains_selector_variable(capsys, monkeypatch):
    """Before: "ships no order selector: the learned rows are skipped (--selector FILE adds them)" for a domain
    whose ``selector_env`` names the file ``train-order`` made, as ``bench --sampler learned`` already said."""
    from types import SimpleNamespace

    from mi_core.bench.order import selector_or_skip

    monkeypatch.delenv("MI_LENS_TOY_LAB_SELECTOR", raising=False)
    domain = toy_like(selector_env="MI_LENS_TOY_LAB_SELECTOR")
    assert selector_or_skip(SimpleNamespace(selector=None), domain, None) is None
    assert ("(--selector FILE or $MI_LENS_TOY_LAB_SELECTOR adds them; python -m mi_core train-order toy_lab makes one)"
            in capsys.readouterr().err)


def test_an_order_task_declaring_bad_budgets_is_refused_as_it_registers_and_fails_no_other_domain(capsys):
    """Before: it registered, and the parser of every domain's train-order and bench-order failed on it
    (``bench-order sudoku`` said 'domain toy_lab: its order task's budgets (5, 0) must be integers in 1..4096')."""
    from toy_domain import ToyOrderTask

    from mi_core.cli import main as cli_main

    class Zero(ToyOrderTask):
        domain, budgets = "toy_lab", (5, 0)

    message = register_fails(toy_like(order_task=Zero()))
    assert "its order_task's budgets (5, 0) must be a tuple of step counts T >= 1, e.g. (3, 5)" in message
    assert "budgets '3,5' must be a tuple" in register_fails(toy_like(order_task=type("Text", (Zero,), {"budgets": "3,5"})()))
    register(toy_like(order_task=type("Unset", (Zero,), {"budgets": None})()))  # none declared, as ()
    unregister("toy_lab")

    class Huge(ToyOrderTask):
        domain, budgets = "toy_lab", (5, 5000)

    register(toy_like(order_task=Huge()))
    try:
        for command in ("bench-order", "train-order"):
            assert cli_main([command, "sudoku", "--help"]) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert cli_main(["train-order", "toy_lab", "--out", "x.safetensors"]) == 2
        assert "--steps-budget 5,5000: 5000 is outside 1..4096" in capsys.readouterr().err
        assert cli_main(["bench-order", "toy_lab", "--puzzles", "p.txt", "--json", "x.json"]) == 2
        assert "argument --budgets: 5000 is outside" in capsys.readouterr().err
    finally:
        unregister("toy_lab")
