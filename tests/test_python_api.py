"""The README's Python API (load_model, probe, estimate_mi, decode) in a notebook user's hands: each common
mistake is a ValueError naming what is wrong, not a torch traceback or a silent answer."""

import re

import pytest
import torch

from mi_core.decoding import decode, decode_final, make_strategy
from mi_core.domain import get_domain
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, estimate_mi, load_estimator
from mi_core.mi.probe import probe
from mi_core.models.loading import load_model

PUZZLE = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."


@pytest.fixture
def tiny_head():
    torch.manual_seed(0)
    return MIEstimator(EstimatorConfig(d_in=32, n_values=9)).eval()


def calls(model, head):
    """One call of each entry point, on a state ``(N,)`` as the call needs it."""
    return {"probe": lambda t: probe(model, t, positions=[0]),
            "estimate_mi": lambda t: estimate_mi(model, head, t[None] if hasattr(t, "shape") else [t]),
            "decode": lambda t: decode_final(model, t[None] if hasattr(t, "shape") else [t],
                                             make_strategy("sequential"), max_steps=1)}


STATE = torch.tensor(get_domain("sudoku").parse_input(PUZZLE))
MISTAKES = [
    (STATE.tolist(), r"got a list: torch.tensor\(domain.parse_input\(text\)\) makes one"),
    (STATE.numpy(), "got a ndarray"),
    (STATE.int(), "int64 token ids, got torch.int32"),
    (STATE.float(), "int64 token ids, got torch.float32"),
    (torch.zeros(16, dtype=torch.long), "16 positions, but the model reads 81"),  # a 4x4 state
    (STATE.to("meta"), r"tokens are on meta, the model on cpu: tokens.to\(model.device\)"),
    (torch.where(STATE == 0, 0, STATE + 9),
     r"position 2 is neither the mask id nor a value token of this model \(unknown ids \[10, 11"),
]


@pytest.mark.parametrize("call", ["probe", "estimate_mi", "decode"])
@pytest.mark.parametrize("tokens,match", MISTAKES, ids=["list", "numpy", "int32", "float", "4x4", "device", "ids"])
def test_bad_tokens_are_a_value_error_naming_the_problem(tiny_mdm, tiny_head, call, tokens, match):
    with pytest.raises(ValueError, match=match):
        calls(tiny_mdm, tiny_head)[call](tokens)


def test_a_9x9_state_on_the_4x4_model_names_the_length():
    with pytest.raises(ValueError, match="81 positions, but the model reads 16"):
        probe(load_model(domain="sudoku4"), STATE)


def test_estimate_mi_refuses_an_estimator_of_another_model(tiny_mdm):
    other = MIEstimator(EstimatorConfig(d_in=32, n_values=20))
    with pytest.raises(ValueError, match="reads hidden size 32 and 20 values, the model gives hidden size 32 and 9"):
        estimate_mi(tiny_mdm, other, STATE[None])
    with pytest.raises(ValueError, match=r"estimator must be an MIEstimator, got a str: load_estimator\(path\)"):
        estimate_mi(tiny_mdm, "assets/sudoku_mi_estimator.safetensors", STATE[None])


def test_estimate_mi_refuses_an_estimator_trained_on_other_weights():
    model = load_model("assets/sudoku_mdm_hard.safetensors")
    estimator = load_estimator("assets/sudoku_mi_estimator.safetensors")  # trained on sudoku_mdm.safetensors
    with pytest.raises(ValueError, match="was trained on assets/sudoku_mdm.safetensors, not on"):
        estimate_mi(model, estimator, STATE[None])


def test_decode_names_a_strategy_given_by_name(tiny_mdm):
    with pytest.raises(ValueError, match=r"strategy must be a Strategy, got a str: make_strategy\(name\)"):
        decode_final(tiny_mdm, STATE[None], "sequential")


@pytest.mark.parametrize("device,match", [("gpu", "unknown device 'gpu'"), ("mps", "unknown device 'mps'")])
def test_load_model_names_a_bad_device(device, match):
    with pytest.raises(ValueError, match=match):
        load_model(domain="sudoku4", device=device)


def test_load_model_takes_a_domain_as_its_first_argument():
    model = load_model(get_domain("sudoku4"))
    assert model.domain == "sudoku4" and model.seq_len == 16


@pytest.mark.parametrize("key", ["sudoku", "sudoku4", "protein", "antibody"])
def test_state_text_names_a_batch_or_another_domains_ids(key):
    domain = get_domain(key)
    with pytest.raises(ValueError, match=r"one .* state of shape \(N,\) is needed, got shape \(2, 3\): for a batch"):
        domain.state_text(torch.ones(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match=f"99 at position 2 is not a token id of the {re.escape(domain.label)} domain"):
        domain.state_text(torch.tensor([0, 1, 99]))
    assert domain.state_text([0, 1, 2]) == domain.state_text(torch.tensor([0, 1, 2]))


@pytest.mark.parametrize("spec,match", [
    ("README.md", r"README.md is not a weights file: give a .safetensors file"),
    ("assets/sudoku_mdm.json", r"sudoku_mdm.json is a config: give the weights file beside it, assets/sudoku_mdm.safet"),
])
def test_load_model_names_a_file_that_is_not_weights(spec, match):
    with pytest.raises(ValueError, match=match):
        load_model(spec, domain="sudoku")


def test_load_model_of_a_config_without_a_domain_names_its_weights():
    with pytest.raises(ValueError, match="is a config: give the weights file beside it"):
        load_model("assets/sudoku_mdm.json")


def test_make_strategy_names_an_object_given_for_a_path(tiny_head):
    with pytest.raises(ValueError, match=r"strategy 'mi': estimator is a path or a name, got a MIEstimator \(an object "
                                         r"goes in mi_fn\)"):
        make_strategy("mi", estimator=tiny_head)


def test_probe_names_a_state_of_no_position(tiny_mdm):
    with pytest.raises(ValueError, match="tokens hold no position"):
        probe(tiny_mdm, torch.zeros(0, dtype=torch.long))


@pytest.mark.parametrize("kwargs,match", [
    ({"temperature": "1"}, "temperature must be >= 0, got '1'"),
    ({"temperature": 1.0, "seed": None}, "seed must be an int or a list of 1 ints"),
    ({"temperature": 1.0, "seed": 1.5}, "seed must be an int or a list of 1 ints"),
])
def test_decode_names_a_bad_temperature_or_seed(tiny_mdm, kwargs, match):
    with pytest.raises(ValueError, match=match):
        decode_final(tiny_mdm, STATE[None], make_strategy("sequential"), **kwargs)


@pytest.mark.parametrize("kwargs,match", [
    ({"eps": "0.01"}, r"eps must be in \[0, 1\), got '0.01'"),
    ({"positions": 0}, r"positions must be indices or a bool mask, got 0: positions=\[0\]"),
])
def test_probe_names_a_bad_eps_or_positions(tiny_mdm, kwargs, match):
    with pytest.raises(ValueError, match=match):
        probe(tiny_mdm, STATE, **kwargs)


def test_a_domain_or_estimator_given_as_the_model_is_named(tiny_head):
    with pytest.raises(ValueError, match=r"model must be a masked model \(load_model reads one\), got a GridDomain"):
        probe(get_domain("sudoku"), STATE)
    with pytest.raises(ValueError, match="model must be a masked model .*, got a MIEstimator"):
        decode_final(tiny_head, STATE[None], make_strategy("sequential"))


def test_the_learned_order_takes_the_models_shipped_selector_by_name(tiny_mdm):
    """estimator=shipped found the model's estimator; a learned order had no such word (its selector=PATH only)."""
    model = load_model(domain="sudoku")
    last = decode_final(model, STATE[None], make_strategy("learned", selector="shipped", steps=10))
    assert (last.tokens != 0).all() and last.passes.tolist()[0] <= 10
    with pytest.raises(ValueError, match="selector=shipped: the model records no domain"):
        decode_final(tiny_mdm, STATE[None], make_strategy("learned", selector="shipped"))
    with pytest.raises(ValueError, match="give selector=PATH .*, selector=shipped"):
        decode_final(model, STATE[None], make_strategy("learned"))


@pytest.mark.parametrize("max_steps", [2.5, "3", -1, True])
def test_decode_names_a_max_steps_that_is_no_count(tiny_mdm, max_steps):
    """Before: 2.5 or "3" was a TypeError from range() ("'float' object cannot be interpreted as an integer"),
    -1 a RuntimeError "did not finish within -1 steps" (0 stays that RuntimeError: no step is a limit)."""
    with pytest.raises(ValueError, match=re.escape(f"max_steps must be an integer >= 0 (or None: the strategy's "
                                                   f"limit), got {max_steps!r}")):
        decode_final(tiny_mdm, STATE[None], make_strategy("sequential"), max_steps=max_steps)


@pytest.mark.parametrize("max_batch", [2.5, "512", None, 0])
def test_probe_names_a_max_batch_that_is_no_count(tiny_mdm, max_batch):
    """Before: 2.5 ran as if an int, "512" was a TypeError ("'<' not supported between instances of 'int' and
    'str'") from deep in the batching, None a TypeError from int()."""
    with pytest.raises(ValueError, match=re.escape(f"max_batch must be at least 1 (an integer), got {max_batch!r}")):
        probe(tiny_mdm, STATE, positions=[0], max_batch=max_batch)


def test_make_strategy_takes_numpy_numbers_as_the_numbers_they_hold():
    """Before: k=np.int64(2) (from np.arange) was refused ("k must be an integer, got np.int64(2)"), as was a
    float32 gamma; relative=2 was kept as 2."""
    import numpy as np

    assert make_strategy("top_margin", k=np.int64(2)).k == 2 and type(make_strategy("topk", k=np.int32(3)).k) is int
    mi = make_strategy("mi", gamma=np.float32(0.5), lam=np.int64(1), relative=np.bool_(True))
    assert (type(mi.gamma), mi.gamma, type(mi.lam), mi.relative) == (float, 0.5, float, True)
    with pytest.raises(ValueError, match="mi: parameter relative must be True or False, got 2"):
        make_strategy("mi", relative=2)
    with pytest.raises(ValueError, match="k must be an integer, got 2.0"):
        make_strategy("top_margin", k=2.0)


def test_load_estimator_names_a_bad_device_and_estimate_mi_one_apart_from_the_model():
    """Before: load_estimator(path, device="gpu") was torch's RuntimeError "Expected one of cpu, cuda, ipu, xpu,
    ...", and an estimator on another device than the model (a model on cuda, load_estimator's default cpu) a
    RuntimeError from inside the head."""
    with pytest.raises(ValueError, match="unknown device 'gpu'; choose auto"):
        load_estimator("assets/sudoku_mi_estimator.safetensors", device="gpu")
    model = load_model("assets/sudoku_mdm.safetensors")
    estimator = load_estimator("assets/sudoku_mi_estimator.safetensors").to("meta")
    with pytest.raises(ValueError, match=r"the estimator is on meta, the model on cpu: load_estimator\(path, "
                                         r"device=model.device\)"):
        estimate_mi(model, estimator, STATE[None])


def test_a_strategy_decoding_another_model_reads_that_models_estimator_and_selector():
    """Before: a strategy kept what estimator=shipped (or selector=shipped) had read for the first model it decoded:
    with another model's weights it silently ran the first model's estimator (or selector)."""
    from mi_core.decoding import decode

    first, other = load_model(domain="sudoku"), load_model("assets/sudoku_mdm_hard.safetensors")
    reused = make_strategy("mi", estimator="shipped", gamma=0.6)
    decode_final(first, STATE[None], reused)
    own = next(iter(decode(other, STATE[None], make_strategy("mi", estimator="shipped", gamma=0.6))))
    again = next(iter(decode(other, STATE[None], reused)))
    assert torch.equal(again.info["mi"], own.info["mi"])
    selector = make_strategy("learned", selector="shipped", steps=10)
    decode_final(first, STATE[None], selector)
    with pytest.raises(ValueError, match="was trained on .*: use a selector trained on this model"):
        decode_final(other, STATE[None], selector)  # the domain's shipped selector was trained on the default model


def test_a_padded_batch_of_two_lengths_is_named_not_taken_for_another_domains_ids():
    """Before: "state 1: the token at position 9 is neither the mask id nor a value token of this model (unknown ids
    [21]): another domain's?" for proteins of two lengths padded into one batch; shipped_estimator_for(domain) said
    "this model was not loaded from a weights file"."""
    from mi_core.mi.estimator import shipped_estimator_for

    protein = get_domain("protein")
    model = load_model(domain=protein)
    long, short = protein.parse_input("MKTAYIA____SFVK"), protein.parse_input("MK__YIAKQ")
    batch = torch.tensor([long, short + [protein.pad_id] * (len(long) - len(short))])
    with pytest.raises(ValueError, match=r"state 1: the token at position 9 is the pad id 21: a batch here holds "
                                         r"states of one length, unpadded; give states of different lengths one at a "
                                         r"time \(tokens\[None\]\)"):
        decode_final(model, batch, make_strategy("sequential"))
    with pytest.raises(ValueError, match="model must be a masked model .*, got a ProteinDomain"):
        shipped_estimator_for(protein)


@pytest.mark.parametrize("key", ["sudoku", "protein"])
def test_state_text_refuses_a_mask_or_floats(key):
    """Before: a bool mask (``t > 0``) read as ids gave "1" at every True; floats were read as ids too."""
    domain = get_domain(key)
    tokens = torch.tensor([0, 1, 2])
    with pytest.raises(ValueError, match="a torch.bool Tensor is a mask, not token ids"):
        domain.state_text(tokens > 0)
    with pytest.raises(ValueError, match="a bool ndarray is a mask, not token ids"):
        domain.state_text(tokens.numpy() > 0)
    for floats in (tokens.float(), tokens.double().numpy(), [0.0, 1.0, 2.0], tokens + 0.5):
        with pytest.raises(ValueError, match=r"token ids are integers, got a .*\(tokens.long\(\)\)"):
            domain.state_text(floats)
    assert domain.state_text(tokens.numpy()) == domain.state_text([0, 1, 2])


def test_decode_and_decode_final_name_an_empty_batch():
    """Before: a batch of no rows was "nothing to decode: no position is masked"; decode() yielded nothing,
    silently."""
    model = load_model(domain="sudoku4")
    empty = torch.zeros(0, 16, dtype=torch.long)
    for run in (lambda: decode_final(model, empty, make_strategy("sequential")),
                lambda: list(decode(model, empty, make_strategy("sequential")))):
        with pytest.raises(ValueError, match=r"nothing to decode: the batch is empty \(tokens of shape \(0, 16\)"):
            run()
    with pytest.raises(ValueError, match="nothing to decode: no position is masked"):
        decode_final(model, torch.ones(1, 16, dtype=torch.long), make_strategy("sequential"))
