"""The exact perturbation probe: a naive reference, invariants on MDMs, pruning bounds, CLI and benchmark."""

import json
import math
from pathlib import Path

import pytest
import torch

from mi_core.cli import main
from mi_core.domains.sudoku import MASK_ID, to_tokens
from mi_core.mi.probe import ProbeInputError, ProbeResult, binary_entropy, probe, pruning_bound, symmetrise
from mi_core.models.base import MDMOutput

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
EASY_SOL = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
SHIPPED = Path("assets/sudoku_mdm.safetensors")


class TableModel(torch.nn.Module):
    """A toy model with arbitrary (inconsistent) conditionals over N positions and V values.

    ``logits[b, j] = bias[j] + sum_k W[k, tokens[b, k], j]``: every visible token shifts every position's
    logits, so the model is neither consistent nor symmetric. Token 0 is the mask, values are 1..V.
    """

    mask_id = 0

    def __init__(self, n: int, v: int, scale: float, seed: int):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("value_tokens", torch.arange(1, v + 1))
        self.bias = torch.nn.Parameter(scale * torch.randn(n, v, generator=g))
        self.weight = torch.nn.Parameter(scale * torch.randn(n, v + 1, n, v, generator=g))

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1])
        shift = self.weight[pos[None, :], tokens].sum(1)  # (B, N, V)
        logits = self.bias + shift
        return MDMOutput(logits.float(), logits[..., :1].float())


class Adversary(torch.nn.Module):
    """Two positions, two values. ``p(X_0 = 2) = s``; X_1 copies X_0 given it, so I(X_0; X_1) = h(s).

    Pruning the rare value of X_0 leaves one kept value, so the pruned MI is 0 and the error is h(s).
    """

    mask_id = 0

    def __init__(self, s: float):
        super().__init__()
        self.register_buffer("value_tokens", torch.tensor([1, 2]))
        self.log_prior = torch.tensor([math.log1p(-s), math.log(s)], dtype=torch.float64)

    def forward(self, tokens):
        b = tokens.shape[0]
        logits = torch.zeros(b, 2, 2, dtype=torch.float64)
        logits[:, 0] = self.log_prior
        given = tokens[:, 0] != 0
        copy = (tokens[:, 0:1] != torch.tensor([[1, 2]])).double() * -1e9  # X_1 = X_0 when X_0 is set
        logits[:, 1] = torch.where(given[:, None], copy, self.log_prior)
        return MDMOutput(logits, logits)


def naive_probe(model, tokens):
    """One sequence per pass, written straight from the formulas: (directional, paper) ``(N, N)``."""
    n = tokens.shape[0]
    masked = tokens == model.mask_id

    def probs(x):
        return model(x[None]).logits[0].double().softmax(-1)

    def h(p):
        return -torch.special.xlogy(p, p).sum(-1)

    base = probs(tokens)
    directional = torch.zeros(n, n, dtype=torch.float64)
    paper = torch.zeros(n, n, dtype=torch.float64)
    for i in masked.nonzero().flatten().tolist():
        mixture, expected_h = 0.0, 0.0
        for v, token in enumerate(model.value_tokens.tolist()):
            x = tokens.clone()
            x[i] = token
            cond = probs(x)
            mixture = mixture + base[i, v] * cond
            expected_h = expected_h + base[i, v] * h(cond)
        for j in masked.nonzero().flatten().tolist():
            if j != i:
                directional[i, j] = h(mixture[j]) - expected_h[j]
                paper[i, j] = h(base[j]) - expected_h[j]
    return directional, paper


def state(text, blanks=None):
    """Tokens of ``text`` with only the first ``blanks`` blanks left masked (the rest from EASY_SOL)."""
    tokens = to_tokens([text])[0]
    if blanks is not None:
        sol = to_tokens([EASY_SOL])[0]
        masked = (tokens == MASK_ID).nonzero().flatten()
        tokens[masked[blanks:]] = sol[masked[blanks:]]
    return tokens


@pytest.fixture
def sharp_mdm(tiny_mdm):
    """The tiny MDM with its head scaled up: peaked marginals, so pruning has values to skip."""
    with torch.no_grad():
        tiny_mdm.head.weight.mul_(60.0)
    return tiny_mdm


def test_exact_probe_matches_naive_reference(tiny_mdm):
    tokens = state(EASY, blanks=8)
    result = probe(tiny_mdm, tokens)
    directional, paper = naive_probe(tiny_mdm, tokens)
    assert torch.allclose(result.mi_directional, directional, atol=1e-7, rtol=0)
    assert torch.allclose(result.mi_paper, paper, atol=1e-7, rtol=0)
    assert result.passes == 1 + 8 * 9


@pytest.mark.parametrize("n,v,seed", [(5, 3, 0), (7, 5, 1), (4, 2, 2)])
def test_any_length_and_vocabulary_matches_reference(n, v, seed):
    model = TableModel(n, v, scale=1.5, seed=seed)
    tokens = torch.zeros(n, dtype=torch.long)
    tokens[0] = 1  # one visible position
    result = probe(model, tokens)
    directional, paper = naive_probe(model, tokens)
    assert torch.allclose(result.mi_directional, directional, atol=1e-10, rtol=0)
    assert torch.allclose(result.mi_paper, paper, atol=1e-10, rtol=0)
    assert result.passes == 1 + (n - 1) * v and result.marginals.shape == (n, v)
    assert result.asymmetry.max() > 1e-4  # an inconsistent model: the diagnostics see it
    assert result.form_gap.max() > 1e-4


def test_invariants_on_mdm(tiny_mdm):
    tokens = state(EASY, blanks=12)
    r = probe(tiny_mdm, tokens)
    masked = tokens == MASK_ID
    assert r.mi_directional.min() >= -1e-6
    assert torch.equal(r.mi, r.mi.T)
    assert torch.allclose(r.mi, (r.mi_directional + r.mi_directional.T) / 2)
    for m in (r.mi_directional, r.mi, r.mi_paper, r.error_bound):
        assert m.dtype == torch.float64 and m.shape == (81, 81)
        assert (m[~masked] == 0).all() and (m[:, ~masked] == 0).all() and (m.diagonal() == 0).all()
    assert torch.allclose(r.marginals.sum(-1), torch.ones(81, dtype=torch.float64))
    given_values = tokens[~masked] - 1
    assert torch.equal(r.marginals[~masked].argmax(-1), given_values)
    assert (r.marginals[~masked].max(-1).values == 1).all()
    assert (r.entropy[~masked] == 0).all() and (r.entropy[masked] > 0).all()
    assert torch.equal(r.probed, masked) and torch.equal(r.masked, masked)
    assert (r.error_bound == 0).all() and r.eps == 0.0 and r.seconds > 0
    assert torch.allclose(r.asymmetry, (r.mi_directional - r.mi_directional.T).abs())


def test_batched_equals_one_at_a_time(tiny_mdm):
    tokens = state(EASY, blanks=6)
    whole = probe(tiny_mdm, tokens, max_batch=512)
    for size in (1, 7):
        split = probe(tiny_mdm, tokens, max_batch=size)
        assert split.passes == whole.passes
        for name in ("mi_directional", "mi", "mi_paper", "marginals", "entropy"):
            assert torch.allclose(getattr(split, name), getattr(whole, name), atol=1e-7, rtol=0), name


def test_same_input_same_output(tiny_mdm):
    tokens = state(EASY, blanks=6)
    a, b = probe(tiny_mdm, tokens), probe(tiny_mdm, tokens)
    for name in ("mi_directional", "mi", "mi_paper", "marginals", "entropy", "error_bound"):
        assert torch.equal(getattr(a, name), getattr(b, name)), name
    assert a.passes == b.passes


def test_eps_zero_equals_exact_and_pruning_stays_in_bound(sharp_mdm):
    tokens = state(EASY, blanks=14)
    exact = probe(sharp_mdm, tokens)
    zero = probe(sharp_mdm, tokens, eps=0.0)
    assert torch.equal(zero.mi_directional, exact.mi_directional) and zero.passes == exact.passes
    assert exact.passes == 1 + 14 * 9
    for eps in (1e-4, 1e-3, 1e-2, 0.1):
        pruned = probe(sharp_mdm, tokens, eps=eps)
        assert pruned.passes < exact.passes
        assert ((pruned.mi_directional - exact.mi_directional).abs() <= pruned.error_bound + 1e-12).all()
        assert ((pruned.mi_paper - exact.mi_paper).abs() <= pruned.error_bound + 1e-12).all()
        assert ((pruned.mi - exact.mi).abs() <= pruned.mi_error_bound + 1e-12).all()
        assert pruned.error_bound.max() > 0 and pruned.eps == eps


@pytest.mark.parametrize("seed", range(6))
def test_pruning_bound_holds_on_inconsistent_models(seed):
    model = TableModel(6, 4, scale=3.0, seed=seed)
    tokens = torch.tensor([0, 0, 0, 0, 2, 0])
    exact = probe(model, tokens)
    for eps in (1e-3, 3e-2, 0.2):
        pruned = probe(model, tokens, eps=eps)
        assert ((pruned.mi_directional - exact.mi_directional).abs() <= pruned.error_bound + 1e-12).all()
        assert ((pruned.mi_paper - exact.mi_paper).abs() <= pruned.error_bound + 1e-12).all()
        assert pruned.mi_directional.min() >= -1e-12


@pytest.mark.parametrize("s", [1e-4, 1e-3, 1e-2])
def test_bound_is_nearly_attained(s):
    model = Adversary(s)
    tokens = torch.tensor([0, 0])
    exact = probe(model, tokens)
    assert exact.mi_directional[0, 1] == pytest.approx(float(binary_entropy(torch.tensor(s, dtype=torch.float64))))
    pruned = probe(model, tokens, eps=2 * s)
    error = float(exact.mi_directional[0, 1] - pruned.mi_directional[0, 1])
    bound = float(pruned.error_bound[0, 1])
    assert pruned.passes == exact.passes - 2  # the rare value of both positions is skipped
    assert 0.5 * bound < error <= bound


def test_pruning_bound_function():
    s = torch.tensor([0.0, 1e-6, 1e-3, 0.5, 0.99], dtype=torch.float64)
    b = pruning_bound(s, 9)
    assert b[0] == 0 and (b[1:] > 0).all() and (b <= math.log(9)).all()
    assert b[2] == pytest.approx(-1e-3 * math.log(1e-3) - 0.999 * math.log(0.999) + 1e-3 * math.log(9))
    assert b[4] == pytest.approx(math.log(9))  # capped: an MI never exceeds log|V|


def test_positions_subset(tiny_mdm):
    tokens = state(EASY, blanks=10)
    masked = (tokens == MASK_ID).nonzero().flatten()
    chosen = masked[[1, 4, 7]].tolist()
    full = probe(tiny_mdm, tokens)
    part = probe(tiny_mdm, tokens, positions=chosen)
    assert part.passes == 1 + 3 * 9 and part.probed.nonzero().flatten().tolist() == sorted(chosen)
    assert torch.allclose(part.mi_directional[chosen], full.mi_directional[chosen], atol=1e-7, rtol=0)
    others = [i for i in range(81) if i not in chosen]
    assert (part.mi_directional[others] == 0).all()
    a, b = chosen[0], masked[0].item()  # only a -> b was probed: mi[a, b] is that direction
    assert part.mi[a, b] == part.mi[b, a] == part.mi_directional[a, b]
    c = chosen[1]  # both directions probed: their average
    assert part.mi[a, c] == pytest.approx(float(full.mi[a, c]), abs=1e-7)
    mask = torch.zeros(81, dtype=torch.bool)
    mask[chosen] = True
    assert torch.equal(probe(tiny_mdm, tokens, positions=mask).mi, part.mi)
    assert probe(tiny_mdm, tokens, positions=[]).passes == 1


def test_symmetrise_counts_available_directions():
    d = torch.tensor([[0.0, 2.0, 4.0], [6.0, 0.0, 0.0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    probed = torch.tensor([True, True, False])
    masked = torch.tensor([True, True, True])
    s = symmetrise(d, probed, masked)
    assert s.tolist() == [[0.0, 4.0, 4.0], [4.0, 0.0, 0.0], [4.0, 0.0, 0.0]]


@pytest.mark.parametrize(
    "kwargs,tokens,match",
    [
        ({}, torch.zeros(2, 81, dtype=torch.long), r"one state of shape \(N,\)"),
        ({}, torch.zeros(81), "int64 token ids"),
        ({"eps": -0.1}, None, r"eps must be in \[0, 1\)"),
        ({"eps": 1.0}, None, r"eps must be in \[0, 1\)"),
        ({"max_batch": 0}, None, "max_batch must be at least 1"),
        ({"positions": [2]}, None, r"positions \[2\] are not masked"),
        ({"positions": [81]}, None, r"positions must be in 0..80"),
        ({"positions": [0.5]}, None, "integer indices or a bool mask"),
        ({"positions": torch.ones(80, dtype=torch.bool)}, None, r"shape \(81,\)"),
    ],
)
def test_bad_input(tiny_mdm, kwargs, tokens, match):
    tokens = state(EASY) if tokens is None else tokens
    with pytest.raises(ProbeInputError, match=match):
        probe(tiny_mdm, tokens, **kwargs)


def test_unknown_token_is_rejected(tiny_mdm):
    tokens = state(EASY)
    tokens[2] = 12
    with pytest.raises(ValueError, match=r"the token at position 2 is neither the mask id nor a value token"):
        probe(tiny_mdm, tokens)


def test_progress_reports_every_batch(tiny_mdm):
    calls = []
    r = probe(tiny_mdm, state(EASY, blanks=5), max_batch=8, progress=lambda d, t: calls.append((d, t)))
    done = [d for d, _ in calls]
    assert done == sorted(done) and calls[0] == (1, r.passes) and calls[-1] == (r.passes, r.passes)
    batch = min(8, math.ceil(r.passes / 10))  # with progress, batches hold at most a tenth of the passes
    assert len(calls) == 1 + math.ceil(45 / batch)
    assert max(b - a for a, b in zip([0] + done, done)) <= math.ceil(r.passes / 10)


def test_nothing_masked(tiny_mdm):
    r = probe(tiny_mdm, to_tokens([EASY_SOL])[0])
    assert r.passes == 1 and (r.mi == 0).all() and (r.entropy == 0).all() and not r.probed.any()


def test_bf16_autocast_stays_close(tiny_mdm):
    tokens = state(EASY, blanks=4)
    exact, low = probe(tiny_mdm, tokens), probe(tiny_mdm, tokens, autocast=True)
    assert low.passes == exact.passes and low.mi_directional.dtype == torch.float64
    assert torch.allclose(low.marginals, exact.marginals, atol=0.02)


def test_to_json_dict(tiny_mdm):
    r = probe(tiny_mdm, state(EASY, blanks=3), eps=0.05)
    d = json.loads(json.dumps(r.to_json_dict()))
    assert len(d["marginals"]) == 81 and len(d["marginals"][0]) == 9 and len(d["entropy"]) == 81
    for key in ("mi_directional", "mi", "mi_paper"):
        assert len(d[key]) == 81 and len(d[key][0]) == 81
    assert d["passes"] == r.passes and d["eps"] == 0.05 and d["error_bound"] == float(r.error_bound.max())
    assert isinstance(ProbeResult(**{**r.__dict__, "masked": None}).masked, torch.Tensor)


@pytest.mark.skipif(not SHIPPED.is_file(), reason="shipped Sudoku MDM not present")
def test_shipped_mdm_invariants():
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm

    model = load_sudoku_mdm(SHIPPED)
    tokens = state(EASY)
    masked = (tokens == MASK_ID).nonzero().flatten()[:6]
    r = probe(model, tokens, positions=masked)
    assert r.mi_directional.min() >= -1e-6 and torch.equal(r.mi, r.mi.T)
    pruned = probe(model, tokens, positions=masked, eps=1e-3)
    assert ((pruned.mi_directional - r.mi_directional).abs() <= pruned.error_bound + 1e-12).all()


# --- command line ---------------------------------------------------------------------------------------


def test_cli_probe_writes_documented_json(tmp_path, model_path):
    out = tmp_path / "probe.json"
    puzzle = EASY[:20] + EASY_SOL[20:]
    rc = main(["probe", "sudoku", "--puzzle", puzzle, "--eps", "0.01", "--json", str(out), "--model",
               str(model_path), "--device", "cpu", "--no-progress"])
    assert rc == 0
    d = json.loads(out.read_text())
    blanks = puzzle.count(".")
    assert len(d["marginals"]) == 81 and len(d["marginals"][0]) == 9 and len(d["entropy"]) == 81
    for key in ("mi_directional", "mi", "mi_paper"):
        m = torch.tensor(d[key])
        assert m.shape == (81, 81)
        given = torch.tensor([c != "." for c in puzzle])
        assert (m[given] == 0).all() and (m[:, given] == 0).all()
    assert d["passes"] <= 1 + blanks * 9 and d["eps"] == 0.01 and d["error_bound"] >= 0 and d["seconds"] > 0


def test_cli_oracle4_is_exact(tmp_path):
    from mi_core.domains.oracle4 import exact_pair_mi

    out = tmp_path / "o.json"
    puzzle = "1...........4..."
    assert main(["probe", "oracle4", "--puzzle", puzzle, "--json", str(out), "--no-progress"]) == 0
    d = json.loads(out.read_text())
    exact = exact_pair_mi(to_tokens([puzzle])[0])
    assert torch.allclose(torch.tensor(d["mi"], dtype=torch.float64), exact, atol=1e-9)


@pytest.mark.parametrize(
    "puzzle,message",
    [
        (EASY[:-1], "a Sudoku has 81 cells"),
        (EASY[:-1] + "x", "bad character 'x' at position 81"),
        ("55" + EASY[2:], "digit 5 appears twice in row 1"),
        ("12345678." + "." * 27 + "........9" + "." * 36, "no solution"),
        ("1...........4...", "a Sudoku has 81 cells, got 16 characters"),
    ],
)
def test_cli_bad_puzzles(model_path, capsys, puzzle, message):
    rc = main(["probe", "sudoku", "--puzzle", puzzle, "--model", str(model_path), "--device", "cpu"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err


def test_cli_missing_model(tmp_path, capsys):
    rc = main(["probe", "sudoku", "--puzzle", EASY, "--model", str(tmp_path / "none.safetensors")])
    assert rc == 2 and "weights file not found" in capsys.readouterr().err


def test_bench_probe_writes_json_and_one_markdown_section(tmp_path, model_path):
    md = tmp_path / "BENCHMARKS.md"
    md.write_text("# Benchmarks\n\nother results stay\n")
    out = tmp_path / "bench.json"
    args = ["bench-probe", "--model", str(model_path), "--device", "cpu", "--masked", "3,5", "--states", "1",
            "--batch-sizes", "4,16", "--min-seconds", "0.01", "--eps", "0.05", "--json", str(out),
            "--markdown", str(md)]
    assert main(args) == 0 and main(args) == 2  # the JSON exists: a rerun needs --force
    assert main([*args, "--force"]) == 0
    res = json.loads(out.read_text())
    assert [r["masked"] for r in res["probe"]] == [3, 5] and res["peak"]["batch"] in (4, 16)
    assert res["probe"][0]["passes"] == 1 + 3 * 9 and res["probe"][0]["pruning"][0]["within_bound"]
    assert "mi_max_abs_diff" in res["probe"][1]["bf16"]
    assert res["probe"][1]["many"]["passes"] == 1 + 5 * 9 and res["probe"][1]["many"]["fraction_of_peak"] > 0
    text = md.read_text()
    assert "all at once" in text and "warm-up" in text
    assert text.count("<!-- bench-probe:start -->") == 1 and text.count("<!-- bench-probe:end -->") == 1
    assert "other results stay" in text and "% of peak" in text


def test_entropy_from_logits_takes_impossible_values():
    """A model may hard-mask a value with a -inf logit: it adds 0 to the entropy, as 0 log 0 = 0 (it gave NaN)."""
    from mi_core.mi.entropy import entropy, entropy_from_logits

    logits = torch.tensor([[0.0, float("-inf"), 1.0], [float("-inf"), 0.0, float("-inf")], [0.5, 0.1, -0.2]])
    got = entropy_from_logits(logits)
    torch.testing.assert_close(got, entropy(logits.softmax(-1)))
    assert torch.isfinite(got).all() and got[1] == 0


def test_a_probe_warns_of_its_cost_only_when_it_is_long():
    from mi_core.commands.probe import cost_note

    said = []
    cost_note(4001, 100, 100, 1.0, lambda text, file: said.append(text))  # 39 s more: no word
    assert said == []
    cost_note(4001, 100, 1, 1.0, lambda text, file: said.append(text))  # 65 min, had the first pass set the pace
    cost_note(400_001, 101, 100, 1.0, lambda text, file: said.append(text))  # 67 min more at 100 passes a second
    assert said[0].startswith("note: this probe runs 4,001 passes, about 65 min more")
    said = said[1:]
    assert said == ["note: this probe runs 400,001 passes, about 67 min more at this pace (Ctrl-C stops it; the "
                    "estimate command reads the MI matrix from an estimator in one pass)"]


def test_the_cost_note_takes_its_pace_from_the_perturbations_not_the_unperturbed_pass(monkeypatch, capsys):
    from types import SimpleNamespace

    import mi_core.commands.probe as command

    clock = iter([10.0, 11.0])  # the unperturbed pass reported at 10 s, the first 100 perturbations by 11 s

    def fake_probe(model, tokens, *, progress, **kwargs):
        progress(1, 1001)
        progress(101, 1001)  # 900 passes left at 100 a second: 9 s, no word
        return "result"

    monkeypatch.setattr(command, "probe", fake_probe)
    monkeypatch.setattr(command.time, "perf_counter", lambda: next(clock))
    args = SimpleNamespace(eps=0.0, max_batch=100, bf16=False, no_progress=True)
    assert command.run_probe(None, None, args) == "result"
    assert "note:" not in capsys.readouterr().err  # timed from the first pass, 1,000 passes took 1,000 s


def test_a_quick_probe_leaves_no_bar_fragment_on_stderr(tmp_path, capsys):
    """A probe over in well under a second printed "0pass [00:00, ?pass/s]" to stderr (a log file keeps it); the
    bar now waits half a second, when its total is known (on a loaded machine it may show, with its total)."""
    out = tmp_path / "o.json"
    assert main(["probe", "oracle4", "--puzzle", "1...........4...", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "?pass/s" not in err and "0pass [" not in err
