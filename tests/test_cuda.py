"""The core on CUDA against the CPU: each domain's probe and estimator, every sampler, one training step.

Tests marked ``cuda`` run only where ``torch.cuda.is_available()``; elsewhere they are reported as
skipped with the reason (see ``conftest.py``). Each check is a function of the device it compares with
the CPU, and ``test_checks_run_on_cpu`` runs them all with the CPU in that role, so the GPU tests'
own code is exercised on every machine.

Tolerances (float32 forward passes; kernels differ between devices, so results agree to rounding):
- probe: marginals and MI within ``PROBE_ATOL`` nats, passes identical;
- estimator: MI within ``EST_ATOL`` nats;
- deterministic samplers (temperature 0): first-step entropies within ``PROB_ATOL``, first-step picks
  identical, final cells agreeing on at least ``AGREE`` of the cells (a near-tie may break the other way
  later); stochastic samplers (random, learned sample) draw from the device's own generator, so only
  their invariants are checked (givens kept, everything filled, passes within the sampler's limit);
- one training step: loss within ``LOSS_RTOL`` (relative), gradients within ``GRAD_ATOL`` + ``LOSS_RTOL``
  relative; the order selector's step (its schedules are sampled on the device) must be finite.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core.decoding import decode, decode_final, make_strategy
from mi_core.domains.sudoku.bench_probe import random_states
from mi_core.mi.estimator import estimate_mi, load_estimator
from mi_core.mi.probe import probe, probe_many

PROBE_ATOL, EST_ATOL, PROB_ATOL, AGREE, LOSS_RTOL, GRAD_ATOL = 1e-4, 1e-4, 1e-4, 0.95, 1e-3, 1e-5
SUDOKU = (Path("assets/sudoku_mdm.safetensors"), Path("assets/sudoku_mi_estimator.safetensors"))
PROTEIN = (Path("assets/protein_mdm.safetensors"), Path("assets/protein_mi_estimator.safetensors"))
SELECTOR = Path("assets/sudoku_order_selector.safetensors")
DETERMINISTIC = [("sequential", {}), ("topk", {"k": 3}), ("top_prob", {"steps": 10}), ("top_margin", {"steps": 10}),
                 ("eb", {"gamma": 0.5}), ("threshold", {"tau": 0.9}), ("mask_predict", {"steps": 10}),
                 ("mi", {"gamma": 0.5, "estimator": str(SUDOKU[1])}),
                 ("mi", {"gamma": 0.5, "lam": 0.5, "relative": True, "estimator": str(SUDOKU[1])}),
                 ("mi_exact", {"gamma": 0.5}), ("learned", {"steps": 10, "selector": str(SELECTOR)}),
                 ("learned_mi", {"steps": 10, "gamma": 2.0, "selector": str(SELECTOR), "estimator": str(SUDOKU[1])})]
STOCHASTIC = [("random", {"k": 3}), ("learned", {"steps": 10, "mode": "sample", "selector": str(SELECTOR)})]

needs_assets = pytest.mark.skipif(not all(p.is_file() for p in (*SUDOKU, *PROTEIN, SELECTOR)),
                                  reason="shipped models not present")


def _models(domain: str, device):
    from mi_core.domains.protein.mdm import load_protein_mdm
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm

    model_path, est_path = SUDOKU if domain == "sudoku" else PROTEIN
    load = load_sudoku_mdm if domain == "sudoku" else load_protein_mdm
    return load(model_path, device), load_estimator(est_path, device)


def _states(domain: str, masked: int, count: int) -> torch.Tensor:
    if domain == "sudoku":
        return torch.stack(random_states(81, masked, count, 11, "cpu"))
    g = torch.Generator().manual_seed(5)
    tokens = torch.randint(1, 21, (count, 40), generator=g)
    for row in tokens:
        row[torch.randperm(40, generator=g)[:masked]] = 0  # protein MASK_ID
    return tokens


def check_probe(device, domain: str) -> None:
    model_cpu, _ = _models(domain, "cpu")
    model_dev, _ = _models(domain, device)
    tokens = _states(domain, 6, 3)
    many = probe_many(model_dev, tokens.to(device))
    assert many.mi.device.type == torch.device(device).type
    for s in range(len(tokens)):
        ref, got = probe(model_cpu, tokens[s]), many.state(s)
        assert got.passes == ref.passes
        assert (got.marginals - ref.marginals).abs().max() < PROBE_ATOL
        assert (got.mi - ref.mi).abs().max() < PROBE_ATOL
        assert (got.mi_paper - ref.mi_paper).abs().max() < PROBE_ATOL
    single = probe(model_dev, tokens[0].to(device))
    assert (single.mi - probe(model_cpu, tokens[0]).mi).abs().max() < PROBE_ATOL


def check_estimator(device, domain: str) -> None:
    model_cpu, est_cpu = _models(domain, "cpu")
    model_dev, est_dev = _models(domain, device)
    tokens = _states(domain, 20 if domain == "sudoku" else 15, 4)
    ref = estimate_mi(model_cpu, est_cpu, tokens)
    got = estimate_mi(model_dev, est_dev, tokens.to(device))
    assert (got.mi.cpu() - ref.mi).abs().max() < EST_ATOL
    assert (got.entropy.cpu() - ref.entropy).abs().max() < PROB_ATOL


def check_samplers(device) -> None:
    model_cpu, _ = _models("sudoku", "cpu")
    model_dev, _ = _models("sudoku", device)
    batch = _states("sudoku", 25, 4)
    for name, params in DETERMINISTIC:
        tokens = _states("sudoku", 6, 2) if name == "mi_exact" else batch  # the exact probe: few blanks
        runs = []
        for model, t in ((model_cpu, tokens), (model_dev, tokens.to(device))):
            strategy = make_strategy(name, **params)
            frames = list(decode(model, t, strategy))
            runs.append(frames)
        ref, got = runs
        assert (got[0].entropy.cpu() - ref[0].entropy).abs().max() < PROB_ATOL, name
        assert torch.equal(got[0].chosen.cpu(), ref[0].chosen), name
        agree = (got[-1].tokens.cpu() == ref[-1].tokens).float().mean()
        assert agree >= AGREE, (name, float(agree))
    tokens = batch
    for name, params in STOCHASTIC:
        strategy = make_strategy(name, **params)
        final = decode_final(model_dev, tokens.to(device), strategy, temperature=1.0, seed=2)
        given = tokens != 0
        assert (final.tokens.cpu() != 0).all() and torch.equal(final.tokens.cpu()[given], tokens[given]), name
        assert int(final.passes.max()) <= strategy.pass_limit(81), name


def check_training_steps(device) -> None:
    from mi_core.decoding.selector import make_order_nets
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm, masked_ce
    from mi_core.order.elbo import order_loss, rollout
    from mi_core.train.estimator import TrainConfig, to_device, train_one

    # the Sudoku MDM: one loss and its gradients from the same weights and batch
    target = torch.stack(random_states(81, 0, 8, 11, "cpu"))  # solved grids
    tokens = target.masked_fill(torch.rand(target.shape, generator=torch.Generator().manual_seed(0)) < 0.5, 0)
    grads = []
    for dev in ("cpu", device):
        model = load_sudoku_mdm(SUDOKU[0], dev).eval()  # no dropout: both devices compute the same function
        loss = masked_ce(model(tokens.to(dev)).logits, target.to(dev) - 1, tokens.to(dev) == 0)
        loss.backward()
        grads.append((float(loss.detach()), [p.grad.detach().cpu() for p in model.parameters()]))
    assert grads[1][0] == pytest.approx(grads[0][0], rel=LOSS_RTOL)
    for a, b in zip(grads[0][1], grads[1][1]):
        assert torch.allclose(b, a, atol=GRAD_ATOL, rtol=LOSS_RTOL)
    # the estimator: two steps of the real trainer on features of the shipped MDM
    model, est = _models("sudoku", "cpu")
    states = _states("sudoku", 6, 8)
    from mi_core.mi.estimator import mdm_features

    hidden, probs, entropy, masked = mdm_features(model, states)
    mi = estimate_mi(model, est, states).mi.detach().clamp_min(0) * 1.5  # any fixed targets serve
    data = {"hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked, "mi": mi}
    cfg = TrainConfig(steps=2, batch=4, eval_every=1, warmup=1, val_frac=0.25)
    train_idx, val_idx = np.arange(6), np.arange(6, 8)
    curves = [train_one(est.cfg, cfg, to_device(data, dev), train_idx, val_idx, log=lambda m: None)[1]["curve"]
              for dev in ("cpu", device)]
    for a, b in zip(*curves):
        assert b["train_loss"] == pytest.approx(a["train_loss"], rel=LOSS_RTOL)
    # train-estimator's variant loop on the device: each variant is scored before it moves to the CPU
    from mi_core.train.estimator import parse_variants, train_variants

    chosen, summary = train_variants(to_device(data, device), est.cfg, cfg, parse_variants("log:free,log:bound"),
                                     log=lambda m: None)
    assert len(summary["variants"]) == 2 and next(chosen.parameters()).device.type == "cpu"
    # the order selector: one ELBO step on the device (schedules sampled with the device's generator)
    model = load_sudoku_mdm(SUDOKU[0], device)
    posterior, selector = (net.to(device) for net in make_order_nets(model.cfg.d_model, 32))
    gen = torch.Generator(device=device).manual_seed(0)
    ro = rollout(model, tokens.to(device), (target - 1).to(device), posterior, selector, 5, 1.0, 2, gen, False)
    loss = order_loss(ro, 2)
    loss.backward()
    grads = [p.grad for p in selector.parameters() if p.grad is not None]
    assert torch.isfinite(loss) and grads and all(torch.isfinite(g).all() for g in grads)


CUDA = "cuda"


@pytest.mark.cuda
@needs_assets
@pytest.mark.parametrize("domain", ["sudoku", "protein"])
def test_probe_on_cuda(domain):
    check_probe(CUDA, domain)


@pytest.mark.cuda
@needs_assets
@pytest.mark.parametrize("domain", ["sudoku", "protein"])
def test_estimator_on_cuda(domain):
    check_estimator(CUDA, domain)


@pytest.mark.cuda
@needs_assets
def test_every_sampler_on_cuda():
    check_samplers(CUDA)


@pytest.mark.cuda
@needs_assets
def test_one_training_step_on_cuda():
    check_training_steps(CUDA)


@pytest.mark.slow  # 8 s on one CPU thread; .ci/run runs it with -m slow
@needs_assets
def test_checks_run_on_cpu():
    """The CUDA checks with the CPU in the device's role: their own code runs everywhere."""
    for domain in ("sudoku", "protein"):
        check_probe("cpu", domain)
        check_estimator("cpu", domain)
    check_samplers("cpu")
    check_training_steps("cpu")


def test_every_sampler_is_covered():
    from mi_core.decoding import STRATEGIES

    covered = {name for name, _ in DETERMINISTIC + STOCHASTIC}
    assert covered == set(STRATEGIES)


COMMANDS = [["train", "sudoku"], ["train", "protein"], ["bench", "sudoku"], ["bench", "protein"], ["bench-suite", "sudoku"],
            ["generate", "protein"], ["sweep", "sudoku"], ["sweep", "protein"], ["diagnose", "sudoku"],
            ["probe", "sudoku"], ["probe", "protein"], ["bench-probe"], ["estimate", "sudoku"],
            ["estimate", "protein"], ["eval-estimator", "sudoku"], ["eval-estimator", "protein"],
            ["make-estimator-data", "sudoku"], ["make-estimator-data", "protein"], ["train-estimator"],
            ["train-order", "sudoku"], ["bench-order", "sudoku"], ["eval-model", "antibody"]]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_every_command_takes_device(command, capsys):
    from mi_core.cli import COMMANDS as REGISTERED
    from mi_core.cli import main
    from mi_core.domain import domain_commands

    assert {c[0] for c in COMMANDS} == set(REGISTERED) | set(domain_commands())
    try:
        code = main([*command, "--help"])
    except SystemExit as stop:  # an entry point may exit on --help itself
        code = stop.code
    assert code == 0 and "--device" in capsys.readouterr().out


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where CUDA is absent")
def test_cuda_asked_for_without_cuda_is_a_one_line_error(capsys):
    from mi_core.cli import main

    assert main(["train-estimator", "--data", "nowhere", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: device 'cuda' requested but CUDA is not available") and err.count("\n") == 1
