"""Learned orders beyond the frozen Sudoku case: the protein data and validation of ``train-order protein``,
the teacher-forced schedule log-likelihood, joint training of the denoiser, the KL weight, and
``bench-order protein``."""

import json

import numpy as np
import pytest
import torch

from mi_core.cli import main as cli_main
from mi_core.decoding.selector import make_order_nets, save_order_net
from mi_core.domains.protein import MASK_ID, ProteinRecord
from mi_core.order.elbo import margin_choice, order_loss, rollout, schedule_loglik
from mi_core.order.loop import OrderTrainConfig, load_nets, make_validator, train_order
from mi_core.order.sequences import val_lengths, validation_windows, window_draw, window_score

AA = list("ACDEFGHIKLMNPQRSTVWY")


@pytest.fixture
def tiny_protein():
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig

    torch.manual_seed(0)
    return ProteinMDM(ProteinMDMConfig(max_len=128, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()


def records(n, lo, hi, seed=0):
    rng = np.random.default_rng(seed)
    return [ProteinRecord(f"r{i}", rng.integers(1, 21, size=int(rng.integers(lo, hi + 1)))) for i in range(n)]


def test_window_draw_gives_equal_length_all_mask_batches_from_real_windows():
    recs = records(40, 30, 120)
    draw = window_draw(recs, 20, 60)
    rng = np.random.default_rng(1)
    texts = ["".join(map(str, r.tokens - 1)) for r in recs]
    for _ in range(5):
        start, target = draw(rng, 8)
        assert start.shape == target.shape and 20 <= start.shape[1] <= 60
        assert (start == MASK_ID).all() and target.min() >= 0 and target.max() <= 19
        for row in target:  # every window is a contiguous piece of one training sequence
            assert any("".join(map(str, row.tolist())) in t for t in texts)
    with pytest.raises(ValueError, match="no training sequence has 500 positions"):
        window_draw(recs, 20, 500)
    with pytest.raises(ValueError, match="1 <= lo <= hi"):
        window_draw(recs, 30, 20)


def test_validation_windows_and_errors():
    assert val_lengths(50, 100) == (50, 67, 83, 100) and val_lengths(7, 8) == (7, 8)
    groups = validation_windows(records(30, 100, 150), 4, val_lengths(50, 100))
    assert [g.shape for g in groups] == [(4, n) for n in (50, 67, 83, 100)]
    with pytest.raises(ValueError, match="only 0 validation sequences reach 50"):
        validation_windows(records(5, 10, 20), 4, (50,))


def test_schedule_loglik_is_the_sum_over_all_positions_when_everything_goes_at_once(tiny_protein):
    target = torch.randint(0, 20, (3, 12), generator=torch.Generator().manual_seed(0))
    start = torch.full_like(target, MASK_ID)
    ll, passes = schedule_loglik(tiny_protein, start, target, lambda p, h, m, t, s: m, steps=4)
    logp = tiny_protein(start).logits.log_softmax(-1).gather(-1, target[..., None])[..., 0].sum(1)
    assert torch.allclose(ll, logp, atol=1e-4) and (passes == 1).all()
    ll_m, passes_m = schedule_loglik(tiny_protein, start, target, margin_choice, steps=4)
    assert (passes_m == 4).all() and torch.isfinite(ll_m).all()


def test_margin_choice_takes_the_uniform_count_by_margin():
    probs = torch.tensor([[[0.9, 0.1], [0.6, 0.4], [0.5, 0.5], [0.99, 0.01]]])
    masked = torch.tensor([[True, True, True, False]])
    got = margin_choice(probs, None, masked, step=1, steps=3)  # ceil(3 / 2) = 2 positions
    assert got.tolist() == [[True, True, False, False]]


def test_protein_validation_compares_the_selector_with_top_margin(tiny_protein):
    groups = [torch.randint(0, 20, (2, n), generator=torch.Generator().manual_seed(n)) for n in (8, 12)]
    validate = make_validator((2, 4), window_score(tiny_protein, groups, bf16=False), frozen=True)
    torch.manual_seed(0)
    out = validate(make_order_nets(32)[1])
    assert set(out) == {"val_T2", "val_passes_T2", "margin_T2", "val_T4", "val_passes_T4", "margin_T4", "val_mean"}
    assert all(np.isfinite(v) for v in out.values()) and out["val_mean"] < 0


def test_finetune_passes_the_denoising_gradient_to_the_mdm_only(tiny_protein):
    torch.manual_seed(0)
    posterior, selector = make_order_nets(32)
    target = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(1))
    start = torch.full_like(target, MASK_ID)
    for p in tiny_protein.parameters():
        p.requires_grad_(True)
    ro = rollout(tiny_protein, start, target, posterior, selector, 3, 0.5, 2, torch.Generator().manual_seed(2),
                 finetune=True)
    assert torch.allclose(ro.denoise_grad.detach(), ro.denoise, atol=1e-4)  # same term, now differentiable
    order_loss(ro, 2).backward()
    assert tiny_protein.head.weight.grad is not None and tiny_protein.head.weight.grad.abs().sum() > 0
    frozen = rollout(tiny_protein, start, target, posterior, selector, 3, 0.5, 2, torch.Generator().manual_seed(2))
    assert frozen.denoise_grad is None and torch.allclose(frozen.denoise, ro.denoise, atol=1e-5)


def test_kl_weight_scales_the_kl_and_is_validated(tiny_protein):
    torch.manual_seed(0)
    nets = make_order_nets(32)
    target = torch.randint(0, 20, (2, 10), generator=torch.Generator().manual_seed(1))
    ro = rollout(tiny_protein, torch.full_like(target, MASK_ID), target, *nets, 3, 0.5, 2, torch.Generator())
    scale = ro.n_masked.float()
    for beta in (1.0, 0.25):  # beta * KL, and the return that weights log Q is D - beta * KL
        returns = ((ro.denoise - beta * ro.kl) / scale).tolist()
        log_q = ro.log_q.tolist()
        # two samples per example: each one's leave-one-out baseline is the other's return
        score = sum((returns[i] - returns[i ^ 1]) * log_q[i] for i in range(len(returns))) / len(returns)
        expected = beta * (ro.kl / scale).mean() - score
        assert torch.allclose(order_loss(ro, 2, beta), expected, atol=1e-6)
    assert not torch.allclose(order_loss(ro, 2, 1.0), order_loss(ro, 2, 0.25))
    with pytest.raises(ValueError, match=r"kl_weight: 0.0 is outside the accepted range 1e-06..1"):
        OrderTrainConfig(kl_weight=0.0)


def test_joint_training_changes_the_denoiser_and_frozen_training_does_not(tiny_protein):
    recs = records(20, 20, 40)
    draw = window_draw(recs, 10, 16)
    before = {k: v.clone() for k, v in tiny_protein.state_dict().items()}
    cfg = OrderTrainConfig(updates=2, batch=2, samples=2, budgets=(3,), bf16=False, width=8)
    train_order(tiny_protein, draw, cfg, 32, log=lambda _: None)
    assert all(torch.equal(before[k], v) for k, v in tiny_protein.state_dict().items())
    train_order(tiny_protein, draw, OrderTrainConfig(updates=2, batch=2, samples=2, budgets=(3,), bf16=False,
                                                     width=8, finetune=True, denoiser_lr=1e-3), 32, log=lambda _: None)
    assert not torch.equal(before["head.weight"], tiny_protein.head.weight)


def write_fasta(path, n=120, seed=0):
    rng = np.random.default_rng(seed)
    path.write_text("".join(f">dom{i}\n{''.join(rng.choice(AA, int(rng.integers(40, 90))))}\n" for i in range(n)))
    return path


def test_train_order_protein_cli_writes_selector_denoiser_and_resumes(tmp_path, tiny_protein, capsys):
    from mi_core.domains.protein.mdm import save_protein_mdm

    model, fasta, out = tmp_path / "p.safetensors", write_fasta(tmp_path / "ref.fa", n=400), tmp_path / "sel.safetensors"
    save_protein_mdm(tiny_protein, model)
    base = ["train-order", "protein", "--model", str(model), "--fasta", str(fasta), "--lengths", "20-30",
            "--updates", "2", "--batch", "2", "--samples", "2", "--steps-budget", "3", "--eval-every", "2",
            "--eval-per-length", "1", "--no-bf16"]
    rng = np.random.default_rng(0)  # sequences long enough for the windows: only the model is too short for them
    (tmp_path / "long.fa").write_text("".join(f">long{i}\n{''.join(rng.choice(AA, 150))}\n" for i in range(400)))
    swap = {"20-30": "100-140", str(fasta): str(tmp_path / "long.fa")}
    long = [swap.get(a, a) for a in base]  # the tiny MDM takes 128 positions
    assert cli_main(long + ["--out", str(out)]) == 2
    assert "--lengths 100-140: windows of 140 positions, longer than the 128 the model takes" in capsys.readouterr().err
    assert cli_main(base + ["--out", str(out), "--force"]) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["denoiser_frozen"] is True and "val_T3" in meta["curve"][0] and "margin_T3" in meta["curve"][0]
    assert not out.with_name("sel_denoiser.safetensors").exists()
    joint = tmp_path / "joint.safetensors"
    assert cli_main(base + ["--out", str(joint), "--init", str(out), "--finetune", "--kl-weight", "0.5"]) == 0
    meta = json.loads(joint.with_suffix(".json").read_text())
    assert meta["denoiser_frozen"] is False and meta["init"] == str(out) and meta["train"]["kl_weight"] == 0.5
    from mi_core.domains.protein.mdm import load_protein_mdm

    denoiser = joint.with_name("joint_denoiser.safetensors")
    assert load_protein_mdm(denoiser).cfg == tiny_protein.cfg
    from mi_core.decoding.selector import check_order_net_fits, load_order_net
    from mi_core.io import file_sha256
    from mi_core.models.base import ModelFileError

    assert meta["mdm_sha256"] == file_sha256(denoiser)  # a fine-tuned selector fits its own denoiser file only
    check_order_net_fits(load_order_net(joint), load_protein_mdm(denoiser), joint)
    with pytest.raises(ModelFileError, match="was trained on"):
        check_order_net_fits(load_order_net(joint), load_protein_mdm(model), joint)
    posterior, selector = load_nets(joint)
    assert posterior.cfg.role == "posterior" and selector.cfg.role == "selector"


def test_bench_order_protein_cli(tmp_path, tiny_protein):
    from mi_core.domains.protein.mdm import save_protein_mdm

    model, fasta, selector = tmp_path / "p.safetensors", write_fasta(tmp_path / "ref.fa", n=400), tmp_path / "s.safetensors"
    save_protein_mdm(tiny_protein, model)
    torch.manual_seed(0)
    save_order_net(make_order_nets(32)[1], selector)
    out = tmp_path / "b.json"
    assert cli_main(["bench-order", "protein", "--reference", str(fasta), "--model", str(model), "--selector",
                     str(selector), "--samples", "3", "--lengths", "10-12", "--seeds", "0,1", "--budgets", "2",
                     "--gammas", "", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    names = [(r["sampler"], r["params"].get("mode")) for r in res["summary"]]
    assert names == [("random", None), ("top_prob", None), ("top_margin", None), ("learned", "threshold"),
                     ("learned", "sample")]
    assert len(res["rows"]) == 10 and all(r["mean_passes"] <= 2 for r in res["rows"])
    assert all(r["seeds"] == 2 and r["jsd_dipeptide_sd"] >= 0 for r in res["summary"])
    assert "### T = 2" in out.with_suffix(".md").read_text()


def test_bench_order_needs_its_inputs(capsys, tmp_path):
    assert cli_main(["bench-order", "protein", "--json", "x.json"]) == 2
    assert "the following arguments are required: --reference" in capsys.readouterr().err
    assert cli_main(["bench-order", "sudoku", "--json", "x.json"]) == 2
    assert "the following arguments are required: --puzzles" in capsys.readouterr().err
    fasta = write_fasta(tmp_path / "ref.fa")
    for extra, message in [(["--seeds", "0,a"], "--seeds: expects integers separated by commas; 'a' is not one"),
                           (["--budgets", "5;10"], "--budgets: expects integers"),
                           (["--budgets", "5,0"], "--budgets: 0 is outside the accepted range 1..4096"),
                           # a value given twice ran its rows twice, and the sd over seeds counted them twice
                           (["--budgets", "5,10,5"], "--budgets: gives 5 more than once: give each value once"),
                           (["--gammas", "8,16,8,16"], "--gammas: gives 8,16 more than once"),
                           (["--seeds", "0,0"], "--seeds: gives 0 more than once"),
                           (["--lengths", "1"], "--lengths 1: sequences of one residue hold no dipeptide"),
                           (["--selector", str(tmp_path / "none.safetensors")], "weights file not found")]:
        assert cli_main(["bench-order", "protein", "--reference", str(fasta), "--json", "x.json", *extra]) == 2
        assert message in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_train_order_init_names_what_is_missing(capsys, tmp_path):
    assert cli_main(["train-order", "sudoku", "--init", str(tmp_path / "none.safetensors")]) == 2
    assert f"--init: no selector at {tmp_path / 'none.safetensors'}" in capsys.readouterr().err
    torch.manual_seed(0)
    save_order_net(make_order_nets(32)[1], tmp_path / "sel.safetensors")
    assert cli_main(["train-order", "sudoku", "--init", str(tmp_path / "sel.safetensors")]) == 2
    assert "has no posterior beside it (sel_posterior.safetensors)" in capsys.readouterr().err


def test_the_committed_order_report_is_its_json_summarised():
    """The report beside the committed protein order benchmark is what its JSON gives (it was left stale once: other
    rows than its JSON and BENCHMARKS.md)."""
    from pathlib import Path

    from mi_core.domains.protein.bench_order import protein_report

    bench = Path(__file__).resolve().parents[1] / "assets" / "benchmarks"
    payload = json.loads((bench / "order_protein_cath.json").read_text())
    budgets = sorted({r["T"] for r in payload["summary"] if r["T"] is not None})
    assert budgets and protein_report(payload["summary"], budgets) in (bench / "order_protein_cath.md").read_text()
