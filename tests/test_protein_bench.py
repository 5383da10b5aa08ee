import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core.cli import main
from mi_core.decoding import STRATEGIES, estimator_mi_fn, make_strategy
from mi_core.domains.protein import MASK_ID, read_fasta, split_of, tokenize
from mi_core.domains.protein import bench as PB
from mi_core.domains.protein import metrics as M


def toks(*texts):
    return [tokenize(t) for t in texts]


@pytest.fixture
def tiny_protein():
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig

    torch.manual_seed(0)
    return ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()


@pytest.fixture
def tiny_estimator():
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator

    torch.manual_seed(1)
    return MIEstimator(EstimatorConfig(d_in=32, n_values=20, d_node=16, d_proj=8, d_pair=8, init_bias=0.0)).eval()


@pytest.fixture
def files(tmp_path, tiny_protein, tiny_estimator):
    """A tiny protein model, an estimator for it and a FASTA of 300 random sequences, all in tmp_path."""
    from mi_core.domains.protein.mdm import save_protein_mdm
    from mi_core.mi.estimator import save_estimator

    model, est, fasta = tmp_path / "p.safetensors", tmp_path / "e.safetensors", tmp_path / "ref.fa"
    save_protein_mdm(tiny_protein, model)
    save_estimator(tiny_estimator, est)
    rng = np.random.default_rng(0)
    fasta.write_text("".join(f">dom{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 30))}\n" for i in range(300)))
    return model, est, fasta


# --- metrics -------------------------------------------------------------------------------------------

def test_jsd_identity_disjoint_symmetric_and_golden():
    seqs = toks("MKTAYIAKQR", "GSHMLEDPVW", "AAAC")
    assert M.jsd_aa(seqs, seqs) == 0.0 and M.jsd_dipeptide(seqs, seqs) == 0.0
    assert M.jsd_aa(toks("AAAA"), toks("CCCC")) == pytest.approx(1.0, abs=1e-12)
    assert M.jsd_dipeptide(toks("ACAC"), toks("DEDE")) == pytest.approx(1.0, abs=1e-12)
    rng = np.random.default_rng(0)
    p, q = rng.random(20), rng.random(20)
    assert M.jsd(p, q) == M.jsd(q, p) and 0 < M.jsd(p, q) < 1
    assert M.jsd(p, 3 * p) == pytest.approx(0.0, abs=1e-12)  # counts are normalised
    # JSD([1,0], [1/2,1/2]) = H([3/4,1/4]) - (H([1,0]) + H([1/2,1/2])) / 2 in bits
    h = -(0.75 * math.log2(0.75) + 0.25 * math.log2(0.25))
    assert M.jsd([1, 0], [0.5, 0.5]) == pytest.approx(h - 0.5, abs=1e-12)
    with pytest.raises(ValueError, match="empty distribution"):
        M.jsd_aa(toks("__"), seqs)
    with pytest.raises(ValueError, match="different shapes"):
        M.jsd([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="negative"):
        M.jsd([1, -1], [1, 1])


def test_compositions_skip_masked_residues():
    comp = M.aa_composition([np.array([1, MASK_ID, 1, 20, 21])])  # mask and padding skipped
    assert comp.sum() == 3 and comp[0] == 2 and comp[19] == 1
    di = M.dipeptide_composition([np.array([1, 2, MASK_ID, 3, 3])])  # A-C and D-D; pairs with the mask skipped
    assert di.sum() == 2 and di[0 * 20 + 1] == 1 and di[2 * 20 + 2] == 1
    assert M.dipeptide_composition(toks("A")).sum() == 0


def test_identity_and_diversity():
    assert M.identity(tokenize("ACDE"), tokenize("ACD")) == 1.0  # over the shorter length
    assert M.identity(tokenize("ACDE"), tokenize("AGD")) == pytest.approx(2 / 3)
    assert M.identity(tokenize("A_C"), tokenize("A_C")) == pytest.approx(2 / 3)  # masked never matches
    same = toks("MKTAYIAKQR") * 4
    d = M.diversity(same, toks("MKTA", "GSHM"))
    assert d["mean_identity"] == 1.0 and d["pairs"] == 6 and d["unique_fraction"] == 0.25
    assert d["reference_mean_identity"] == 0.0 and d["reference_pairs"] == 1
    assert M.unique_fraction(toks("AC", "AC", "AD")) == pytest.approx(2 / 3)
    rng = np.random.default_rng(0)
    many = [rng.integers(1, 21, 40) for _ in range(100)]
    a, n = M.mean_pairwise_identity(many, max_pairs=50, seed=3)
    assert n == 50 and (a, n) == M.mean_pairwise_identity(many, max_pairs=50, seed=3)
    assert abs(a - 0.05) < 0.02  # uniform over 20 letters: identity ~ 1/20
    assert math.isnan(M.mean_pairwise_identity(many[:1])[0])


def test_the_floor_sample_is_left_out_of_what_it_is_compared_with():
    rng = np.random.default_rng(1)
    ref = [rng.integers(1, 21, int(n)) for n in rng.integers(60, 120, 400)]
    sample, rest = M.floor_split(ref, [50, 70, 200, 119], seed=5)
    assert [len(s) for s in sample] == [50, 70, 119, 119]  # 200: none is that long, so the longest left
    assert all(any(np.array_equal(s, r[: len(s)]) for r in ref) for s in sample)
    assert len(rest) == 396 and not any(any(np.array_equal(s, r[: len(s)]) for r in rest) for s in sample)
    again, _ = M.floor_split(ref, [50, 70, 200, 119], seed=5)
    assert all(np.array_equal(a, b) for a, b in zip(sample, again))
    small, large = M.floor_split(ref, [60] * 10, seed=0), M.floor_split(ref, [60] * 150, seed=0)
    assert M.jsd_dipeptide(*large) < M.jsd_dipeptide(*small)  # the floor falls with the sample size
    few, others = M.floor_split(ref[:5], [5] * 10)  # too few to leave out: one half sampled, the other compared
    assert len(few) == 10 and len(others) == 3 and not any(any(np.array_equal(s, r[:5]) for r in others) for s in few)
    drawn, _ = M.floor_split(ref[:399], [80] * 200, seed=3)  # with replacement from the half: not one sequence
    assert len({s.tobytes() for s in drawn}) > 50  # it drew one sequence 200 times
    assert M.floor_split(ref[:1], [5]) == ([], [])


def test_the_metric_compares_its_floor_sample_with_the_rest_of_the_reference():
    rng = np.random.default_rng(2)
    ref = [rng.integers(1, 21, int(n)) for n in rng.integers(60, 120, 600)]
    metric = M.CompositionMetric(ref, seed=4)
    for i in range(200):
        metric.update(i, np.zeros(80, int), rng.integers(1, 21, 80), passes=1)
    sample, rest = M.floor_split(ref, [80] * 200, seed=4)
    out = metric.compute()
    assert out["jsd_dipeptide_floor"] == M.jsd_dipeptide(sample, rest) != M.jsd_dipeptide(sample, ref)
    assert out["jsd_aa_floor"] == M.jsd_aa(sample, rest)


# --- generation ----------------------------------------------------------------------------------------

def strategies_for_test(tiny_estimator, estimator_path=None):
    from mi_core.decoding.selector import make_order_nets

    torch.manual_seed(2)
    selector = make_order_nets(32)[1].eval()
    mi = {"estimator": str(estimator_path)} if estimator_path else {"mi_fn": estimator_mi_fn(tiny_estimator)}
    return [("learned", {"steps": 3, "net": selector}), ("learned_mi", {"steps": 3, "gamma": 2.0, "net": selector, **mi}),
            ("sequential", {}), ("random", {"steps": 3}), ("topk", {"k": 4}), ("top_prob", {"k": 3}),
            ("top_margin", {"k": 3}), ("eb", {"gamma": 4.0}), ("threshold", {"tau": 0.06}),
            ("mask_predict", {"steps": 3}), ("mi", {"gamma": 4.0, "lam": 1.0, **mi}), ("mi_exact", {"gamma": 4.0})]


def test_every_strategy_generates_valid_sequences(tiny_protein, tiny_estimator):
    names = {name for name, _ in strategies_for_test(tiny_estimator)}
    assert names == set(STRATEGIES), "a registered sampler is not covered here"
    for name, params in strategies_for_test(tiny_estimator):
        lengths = [5, 3, 5] if name == "mi_exact" else [7, 12, 7, 20]
        gen = PB.generate(tiny_protein, lengths, make_strategy(name, **params), seed=1, batch_size=2)
        assert [len(s) for s in gen.sequences] == lengths, name
        assert all(((s >= 1) & (s <= 20)).all() for s in gen.sequences), name
        assert all(1 <= p <= n for p, n in zip(gen.passes, lengths)), name
        assert all(e > 0 for e in gen.extra_passes) == (name == "mi_exact"), name  # only the exact probe spends its own
        again = PB.generate(tiny_protein, lengths, make_strategy(name, **params), seed=1, batch_size=2)
        assert all((a == b).all() for a, b in zip(gen.sequences, again.sequences)) and gen.passes == again.passes, name
    gen = PB.generate(tiny_protein, [20] * 3, make_strategy("topk", k=4), seed=0)
    assert gen.passes == [5, 5, 5]
    other = PB.generate(tiny_protein, [20] * 3, make_strategy("topk", k=4), seed=1)
    assert any((a != b).any() for a, b in zip(gen.sequences, other.sequences))


def test_estimator_path_and_templates(tiny_protein, tiny_estimator, tmp_path):
    from mi_core.mi.estimator import save_estimator

    path = tmp_path / "e.safetensors"
    save_estimator(tiny_estimator, path)
    by_fn = PB.generate(tiny_protein, [9, 9], make_strategy("mi", gamma=4.0, mi_fn=estimator_mi_fn(tiny_estimator)))
    by_path = PB.generate(tiny_protein, [9, 9], make_strategy("mi", gamma=4.0, estimator=str(path)))
    assert all((a == b).all() for a, b in zip(by_fn.sequences, by_path.sequences)) and by_fn.passes == by_path.passes
    template = tokenize("MKT__A___W")
    given = template != MASK_ID
    for name, params in strategies_for_test(tiny_estimator, path):
        gen = PB.generate(tiny_protein, [template, template], make_strategy(name, **params), seed=2)
        for s in gen.sequences:
            assert (s[given] == template[given]).all() and ((s >= 1) & (s <= 20)).all(), name
    full = PB.generate(tiny_protein, [tokenize("MKTA")], make_strategy("sequential"))
    assert full.sequences[0].tolist() == tokenize("MKTA").tolist() and full.passes == [0]


def test_argmax_collapses_and_bad_targets(tiny_protein):
    gen = PB.generate(tiny_protein, [15] * 3, make_strategy("sequential"), temperature=0.0, seed=4)
    assert all((s == gen.sequences[0]).all() for s in gen.sequences)  # why the default temperature is 1
    with pytest.raises(ValueError, match="longer than the 64"):
        PB.generate(tiny_protein, [65], make_strategy("sequential"))
    with pytest.raises(ValueError, match="length must be >= 1"):
        PB.generate(tiny_protein, [0], make_strategy("sequential"))
    with pytest.raises(ValueError, match="token ids 0..20"):
        PB.generate(tiny_protein, [np.array([1, 21])], make_strategy("sequential"))


def test_lengths_and_reference(files):
    assert PB.parse_lengths("50-100") == (50, 100) and PB.parse_lengths(" 80 ") == (80, 80)
    for bad in ("100-50", "a-b", "0-5", "5-", ""):
        with pytest.raises(ValueError, match="--lengths"):
            PB.parse_lengths(bad)
    drawn = PB.draw_lengths(500, 50, 100, seed=0)
    assert drawn == PB.draw_lengths(500, 50, 100, seed=0) and min(drawn) == 50 and max(drawn) == 100
    _, _, fasta = files
    ref = PB.reference_set(fasta)
    assert ref and all(split_of(r.name) == "reference" for r in ref)
    assert len(PB.reference_set(fasta, "all")) == 300 and len(PB.reference_set(fasta, limit=3)) == 3
    with pytest.raises(ValueError, match="unknown reference split"):
        PB.reference_set(fasta, "test")


# --- commands ------------------------------------------------------------------------------------------

def test_bench_protein_writes_json(files, tmp_path, capsys):
    model, _, fasta = files
    out = tmp_path / "b.json"
    rc = main(["bench", "protein", "--samples", "6", "--lengths", "8-16", "--sampler", "topk", "--set", "k=4",
               "--reference", str(fasta), "--json", str(out), "--model", str(model), "--device", "cpu", "--seed", "3"])
    assert rc == 0
    res = json.loads(out.read_text())
    for key in ("n", "mean_passes", "passes_min", "passes_median", "passes_max", "jsd_aa", "jsd_dipeptide",
                "jsd_aa_floor", "jsd_dipeptide_floor",
                "diversity", "sampler", "params", "temperature", "seconds", "model", "precision", "passes", "sequences"):
        assert key in res, key
    lengths = PB.draw_lengths(6, 8, 16, seed=3)
    assert res["n"] == 6 and [len(s) for s in res["sequences"]] == lengths
    assert res["passes"] == [math.ceil(n / 4) for n in lengths] and res["mean_passes"] == np.mean(res["passes"])
    assert res["params"] == {"k": 4} and res["temperature"] == 1.0 and res["precision"] == "fp32"
    assert 0 < res["jsd_aa"] < 1 and 0 < res["jsd_dipeptide"] < 1
    assert set(res["diversity"]) >= {"mean_identity", "reference_mean_identity", "unique_fraction"}
    assert res["model"] == str(model) and res["reference_n"] == len(PB.reference_set(fasta))
    assert '"jsd_aa"' in capsys.readouterr().out


@pytest.mark.parametrize("change, message", [
    ({"--lengths": "100-50"}, "--lengths '100-50'"),
    ({"--lengths": "1"}, "--lengths 1: sequences of one residue hold no dipeptide"),  # before decoding
    ({"--lengths": "70-70"}, "--lengths 70-70: 70 positions, longer than the 64 this model takes"),  # before decoding
    ({"--reference": "absent.fa"}, "FASTA file not found"),
    ({"--sampler": "nope"}, "unknown sampler 'nope'"),
    ({"--sampler": "mi"}, "needs an MI estimator"),
    ({"--model": "absent.safetensors"}, "protein MDM not found"),
])
def test_bench_protein_bad_input(files, tmp_path, capsys, change, message):
    model, _, fasta = files
    opts = {"--samples": "2", "--lengths": "8-10", "--reference": str(fasta), "--model": str(model), "--device": "cpu"}
    opts.update({k: (str(tmp_path / v) if k in ("--reference", "--model") else v) for k, v in change.items()})
    rc = main(["bench", "protein", *[x for kv in opts.items() for x in kv]])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and message in err[0]


def test_generate_protein(files, tmp_path, capsys):
    model, est, _ = files
    out = tmp_path / "g.fa"
    assert main(["generate", "protein", "--template", "MKT__A___W", "--sampler", "mi", "--set", f"estimator={est}",
                 "--set", "gamma=4", "--n", "3", "--fasta", str(out), "--model", str(model), "--device", "cpu"]) == 0
    recs = read_fasta(out)
    assert len(recs) == 3 and all(r.text()[:3] == "MKT" and r.text()[5] == "A" and r.masked == 0 for r in recs)
    assert "passes=" in recs[0].name and "sampler=mi" in recs[0].name and capsys.readouterr().out == out.read_text()
    assert main(["generate", "protein", "--length", "12", "--n", "2", "--model", str(model), "--device", "cpu"]) == 0
    two = capsys.readouterr().out.splitlines()[1::2]
    assert [len(line) for line in two] == [12, 12]
    assert main(["generate", "protein", "--length", "12", "--n", "5", "--model", str(model), "--device", "cpu"]) == 0
    assert capsys.readouterr().out.splitlines()[1:4:2] == two  # each seeded by its number: --n 5 begins with --n 2's
    assert main(["generate", "protein", "--template", "MKTA", "--model", str(model)]) == 2
    assert "has no masked residue to generate: write _ or X" in capsys.readouterr().err
    assert main(["generate", "protein", "--length", "8", "--sampler", "topk", "--set", "steps=2", "--set", "k=1",
                 "--model", str(model)]) == 2
    assert "give k or steps, not both" in capsys.readouterr().err
    assert main(["generate", "protein", "--template", "MK1_", "--model", str(model)]) == 2
    assert "'1' at 3" in capsys.readouterr().err
    assert main(["generate", "protein", "--template", "M" + "_" * 300, "--model", str(model)]) == 2
    assert "error: --template has 301 residues, longer than the 64 residues" in capsys.readouterr().err
    assert main(["generate", "protein", "--template", "MK__", "--sampler", "mi_exact", "--n", "1", "--model",
                 str(model), "--device", "cpu"]) == 0
    header = capsys.readouterr().out.splitlines()[0]  # the exact probe's passes were left out of the header
    assert re.search(r" passes=\d+ probe_passes=\d+ sampler=mi_exact", header), header


def test_protein_sweep_rows_html_and_section(files, tmp_path, capsys):
    model, est, fasta = files
    out, md = tmp_path / "s.json", tmp_path / "B.md"
    base = ["sweep", "protein", "--reference", str(fasta), "--samples", "4", "--lengths", "6-10", "--json", str(out),
            "--markdown", str(md), "--model", str(model), "--device", "cpu", "--name", "tiny"]
    assert main(base + ["--grid", "topk:k=2,4", "--grid", "mi:gamma=1;lam=1"]) == 0
    assert "skipping mi" in capsys.readouterr().err
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["params"]) for r in rows] == [("topk", {"k": 2}), ("topk", {"k": 4})]
    assert main(base + ["--grid", "mi:gamma=1;lam=1", "--grid", "sequential", "--estimator", str(est), "--merge"]) == 0
    rows = json.loads(out.read_text())
    assert [r["sampler"] for r in rows] == ["topk", "topk", "mi", "sequential"]
    for r in rows:
        assert r["n"] == 4 and 0 <= r["jsd_aa"] <= 1 and 0 <= r["jsd_dipeptide"] <= 1 and "mean_identity" in r["diversity"]
    assert rows[0]["mean_passes"] > rows[1]["mean_passes"] and rows[3]["mean_passes"] == np.mean(PB.draw_lengths(4, 6, 10))
    text = md.read_text()
    assert text.count("<!-- sweep-protein-tiny:start -->") == 1 and "| sequential |" in text and "JSD dipeptide" in text
    from mi_lens_app.sweep_plot import main as plot_main

    assert plot_main([str(out), str(out.with_suffix(".html"))]) == 0 and "JSD" in out.with_suffix(".html").read_text()
    assert main(base + ["--samplers", "mi", "--force"]) == 2  # the default grid's mi rows without an estimator: nothing left
    assert "grid is empty" in capsys.readouterr().err


def test_protein_grid_default():
    from mi_core.bench.sweep import parse_grid_spec
    from mi_core.domains.protein.bench import GeneratedSequences

    PROTEIN_GRID = GeneratedSequences.sweep_grid

    configs = [c for spec in PROTEIN_GRID for c in parse_grid_spec(spec)]
    assert len(configs) == 1 + 3 + 3 + 4 + 3 + 1 + 3 + 3 + 1
    for name, params in configs:
        make_strategy(name, **params)


def test_shipped_estimator_only_for_the_model_it_was_trained_on(files):
    from mi_core.bench.decode import default_estimator, with_estimator
    from mi_core.domain import get_domain
    from mi_core.models.loading import load_model

    domain = get_domain("protein")
    shipped, tiny = load_model("assets/protein_mdm.safetensors"), load_model(str(files[0]))
    assert Path(default_estimator(shipped, domain)).name == "protein_mi_estimator.safetensors"
    assert default_estimator(tiny, domain) is None and default_estimator(tiny, domain, "x.safetensors") == "x.safetensors"
    assert with_estimator(make_strategy("mi", gamma=16.0), shipped, domain, "it").estimator.endswith("protein_mi_estimator.safetensors")
    with pytest.raises(ValueError, match="needs an MI estimator for a tiny MDM"):
        with_estimator(make_strategy("mi"), tiny, domain, "a tiny MDM")
    assert with_estimator(make_strategy("topk", k=4), tiny, domain, "a tiny MDM").name == "topk"  # samplers without MI untouched


def test_help_says_protein_sampling_is_seeded_per_batch_and_it_is(tiny_protein, capsys):
    """bench and sweep protein seed once per batch (their recorded figures' rule), so the batch size and the number
    of sequences change the sequences: their --batch-size help says so. generate seeds each sequence alone."""
    for argv in (["bench", "protein"], ["sweep", "protein"], ["bench", "sudoku"]):
        assert main([*argv, "--help"]) == 0
        said = "sampling is seeded once per batch" in " ".join(capsys.readouterr().out.split())
        assert said == (argv[1] == "protein"), argv
    assert main(["generate", "protein", "--help"]) == 0
    assert "--n 8 begins with --n 4's" in " ".join(capsys.readouterr().out.split())
    strategy = make_strategy("sequential")
    by_four, by_two = (PB.generate(tiny_protein, [12] * 4, strategy, seed=0, batch_size=b) for b in (4, 2))
    assert any((a != b).any() for a, b in zip(by_four.sequences, by_two.sequences))
    four, eight = (PB.generate(tiny_protein, [12] * n, strategy, seed=0) for n in (4, 8))
    assert any((a != b).any() for a, b in zip(four.sequences, eight.sequences))


def test_sweep_merge_of_another_domains_rows_is_refused_before_any_work(files, model_path, tmp_path, capsys,
                                                                         monkeypatch):
    """--merge refused another model's rows in the same set, but took another domain's under another set name (a
    Sudoku sweep into a protein one, a protein one into an antibody one): the merged file mixed two measures and
    could not be plotted. Now it is refused before the model loads, naming both domains and the file."""
    from mi_core.bench import decode
    from tests.test_cli import EASY

    model, _, fasta = files
    out, puzzles = tmp_path / "s.json", tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    protein = ["sweep", "protein", "--reference", str(fasta), "--samples", "2", "--lengths", "6-8", "--json", str(out),
               "--model", str(model), "--device", "cpu", "--name", "tiny", "--grid", "topk:k=2", "--threads", "1"]
    sudoku = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=8", "--model", str(model_path),
              "--json", str(out), "--device", "cpu", "--threads", "1"]
    assert main(protein) == 0
    before, _ = out.read_text(), capsys.readouterr()
    real_load = decode.load
    monkeypatch.setattr(decode, "load", lambda *a, **k: pytest.fail("the model loaded"))
    assert main([*sudoku, "--merge", "--name", "sudoku_set"]) == 2 and out.read_text() == before
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: --merge: {out} holds protein sweep rows (set 'tiny'), not sudoku: a file of two domains "
                   "cannot be plotted; write this sweep to another --json"]
    antibody = ["sweep", "antibody", "--csv", str(tmp_path / "none.csv"), "--region", "cdr3", "--grid", "sequential",
                "--json", str(out), "--merge", "--threads", "1"]
    assert main(antibody) == 2 and out.read_text() == before
    assert f"error: --merge: {out} holds protein sweep rows (set 'tiny'), not antibody" in capsys.readouterr().err
    monkeypatch.setattr(decode, "load", real_load)
    assert main([*sudoku, "--force"]) == 0  # and the other way round: a Sudoku sweep into a protein one
    before, _ = out.read_text(), capsys.readouterr()
    assert main([*protein, "--merge"]) == 2 and out.read_text() == before
    assert f"{out} holds sudoku sweep rows (set 'p'), not protein" in capsys.readouterr().err
    assert main([*sudoku, "--grid", "topk:k=4", "--merge"]) == 0  # the same domain still merges
    assert [r["params"] for r in json.loads(out.read_text())] == [{"k": 8}, {"k": 4}]
