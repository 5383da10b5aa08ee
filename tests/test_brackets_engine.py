"""The engine with an out-of-tree domain: the Dyck-2 brackets plugin of ``examples/brackets`` (its own model,
estimator and metric, words of 8-16 positions) through the command line, in this process. Each test fails
where the engine assumed a protein or Sudoku domain: the estimator bench / sweep / bench-order read, the order
task's lengths and step budgets, sweep's default step counts, ``--min-len``, how probe and estimate name a pair, and
sweep's columns."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core import cli
from mi_core.io import display_path, file_sha256

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
WORDS = "([__)]__\n(([]))__[]\n(__)[__]()\n[[__]]__\n"  # one state a line; the metric needs no solutions


@pytest.fixture(scope="module")
def brackets():
    from mi_core.domain import DOMAINS, register, unregister

    sys.path.insert(0, str(EXAMPLES))
    module = importlib.import_module("brackets")  # registers the domain on its first import
    if "brackets" not in DOMAINS:  # imported and unregistered earlier in this process
        register(module.BRACKETS)
    yield module.BRACKETS
    unregister("brackets")
    sys.path.remove(str(EXAMPLES))


@pytest.fixture
def words(tmp_path):
    path = tmp_path / "words.txt"
    path.write_text(WORDS)
    return path


def shipped_estimator(domain) -> Path:
    return Path(domain.estimator_default)


def copy_estimator(domain, folder: Path, **meta) -> Path:
    """The shipped estimator copied into ``folder``, its JSON updated with ``meta``."""
    src = shipped_estimator(domain)
    dst = folder / "copy_mi_estimator.safetensors"
    shutil.copy(src, dst)
    record = json.loads(src.with_suffix(".json").read_text()) | meta
    dst.with_suffix(".json").write_text(json.dumps(record))
    return dst


# -- 1. bench, sweep and bench-order read the domain's own estimator -------------------------------------------------
def test_bench_mi_reads_the_domains_estimator(brackets, words, tmp_path, capsys):
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "brackets", "--puzzles", str(words), "--sampler", "mi", "--json", str(out),
                     "--threads", "1"]) == 0, capsys.readouterr().err
    result = json.loads(out.read_text())
    assert result["n"] == 4 and result["sampler"] == "mi" and {"well_nested", "givens_kept"} <= set(result)
    shipped = brackets.estimator_path()
    assert result["estimator"] == display_path(shipped) and result["estimator_sha256"] == file_sha256(shipped)


def test_default_estimator_is_the_domains_checked_on_the_model(brackets, tmp_path, monkeypatch):
    from mi_core.bench.decode import default_estimator
    from mi_core.models.loading import load_model

    model = load_model(domain=brackets)
    assert Path(default_estimator(model, brackets)) == shipped_estimator(brackets)
    assert default_estimator(model, brackets, "given.safetensors") == "given.safetensors"  # --estimator first
    copy = copy_estimator(brackets, tmp_path)
    monkeypatch.setenv("MI_LENS_BRACKETS_ESTIMATOR", str(copy))  # the variable before the default
    assert Path(default_estimator(model, brackets)) == copy
    copy_estimator(brackets, tmp_path, mdm_sha256="0" * 64)  # trained on other weights: not taken
    assert default_estimator(model, brackets) is None


def test_bench_keeps_set_estimator_first(brackets, words, tmp_path, capsys):
    missing = tmp_path / "none.safetensors"
    assert cli.main(["bench", "brackets", "--puzzles", str(words), "--sampler", "mi", "--set",
                     f"estimator={missing}", "--threads", "1"]) == 2
    assert str(missing) in capsys.readouterr().err


def test_bench_names_a_missing_estimator_when_the_domains_fits_no_model(brackets, words, tmp_path, monkeypatch,
                                                                         capsys):
    monkeypatch.setenv("MI_LENS_BRACKETS_ESTIMATOR", str(copy_estimator(brackets, tmp_path, mdm_sha256="0" * 64)))
    assert cli.main(["bench", "brackets", "--puzzles", str(words), "--sampler", "mi", "--threads", "1"]) == 2
    assert "needs an MI estimator" in capsys.readouterr().err


def test_bench_order_runs_mi_rows_with_the_domains_estimator(brackets, words, tmp_path):
    from mi_core.decoding.selector import make_order_nets, save_order_net

    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(64)[1], selector)
    out = tmp_path / "order.json"
    assert cli.main(["bench-order", "brackets", "--puzzles", str(words), "--selector", str(selector), "--budgets",
                     "2", "--gammas", "1", "--json", str(out), "--threads", "1"]) == 0
    assert {r["sampler"] for r in json.loads(out.read_text())} >= {"learned", "eb", "mi", "sequential"}


# -- 1 and 5. sweep: the mi rows, and columns of the metric's own figures ---------------------------------------------
def test_sweep_runs_the_mi_rows(brackets, words, tmp_path):
    out = tmp_path / "sweep.json"
    assert cli.main(["sweep", "brackets", "--puzzles", str(words), "--grid", "sequential", "--grid", "mi:gamma=1",
                     "--json", str(out), "--threads", "1"]) == 0
    rows = json.loads(out.read_text())
    assert [r["sampler"] for r in rows] == ["sequential", "mi"]
    assert "estimator" not in rows[0] and rows[1]["estimator_sha256"] == file_sha256(brackets.estimator_path())


def test_sweep_tabulates_the_metrics_figures(brackets, words, tmp_path, capsys):
    out, md = tmp_path / "sweep.json", tmp_path / "BENCH.md"
    assert cli.main(["sweep", "brackets", "--puzzles", str(words), "--grid", "sequential", "--grid", "topk:k=2",
                     "--json", str(out), "--markdown", str(md), "--threads", "1"]) == 0
    text = md.read_text()
    assert "| sampler | params | n | accuracy | well nested | givens kept | mean passes | seconds |" in text
    assert "cell acc." not in text and "Frontier (accuracy vs passes)" in text
    progress = [line for line in capsys.readouterr().err.splitlines() if line.startswith("words topk")]
    assert progress and re.search(r"accuracy \S+, well_nested \S+, givens_kept \S+, mean_passes", progress[0])


def test_a_level_is_refused_where_the_files_have_none(brackets, words, tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert cli.main(["sweep", "brackets", "--puzzles", str(words), "--level", "Hard", "--grid", "sequential",
                     "--json", str(out), "--threads", "1"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == ("error: --level Hard: a Dyck-2 brackets file has no levels "
                                                        "(one state a line)")
    assert not out.exists()


def test_the_app_opens_on_the_settings_tuned_for_the_words(brackets):
    from mi_lens_app import support

    def default(name, param):
        return next(f.default for f in support.strategy_fields(name, brackets) if f.name == param)

    assert (default("mi", "gamma"), default("mi", "lam"), default("eb", "gamma")) == (3.0, 1.0, 1.5)


def test_sweep_table_of_a_solved_metric_keeps_its_columns(tmp_path):
    from mi_core.bench.metrics import SolvedMetric
    from mi_core.bench.sweep import metric_figures, puzzle_section

    metric = SolvedMetric([np.array([1, 2]), np.array([2, 1])], ["easy", "hard"])
    for i, final in enumerate([np.array([1, 2]), np.array([1, 2])]):
        metric.update(i, np.array([0, 0]), final, 2)
    res = metric.compute() | {"seconds": 0.5}
    assert metric_figures([res]) == ["accuracy", "cell_accuracy"]
    md = tmp_path / "B.md"
    rows = [{"sampler": "sequential", "params": {}, **res}]
    puzzle_section(rows, "set", torch.device("cpu"), "fp32", "cmd", md, figures=metric_figures([res]))
    assert "| sampler | params | n | accuracy | cell acc. | mean passes | seconds |" in md.read_text()


def test_a_solved_metric_of_full_grids_has_no_wrong_cell():
    from mi_core.bench.metrics import SolvedMetric

    metric = SolvedMetric([np.array([1, 2]), np.array([2, 1])], ["easy", "hard"])
    for i, grid in enumerate([np.array([1, 2]), np.array([2, 1])]):
        metric.update(i, grid, grid, 0)  # nothing blank: solved in 0 passes
    res = metric.compute()
    assert res["accuracy"] == 1.0 and res["cell_accuracy"] == 1.0  # cell_accuracy was 0.0
    assert res["by_level"]["hard"]["cell_accuracy"] == 1.0


# -- 2. the order task's lengths ---------------------------------------------------------------------------------------
ORDER_RUN = ["--steps-budget", "2", "--updates", "2", "--batch", "2", "--samples", "2", "--eval-every", "2",
             "--eval-per-length", "4", "--no-bf16", "--threads", "1"]


def test_train_order_default_lengths_fit_short_words(brackets, tmp_path):
    out = tmp_path / "sel.safetensors"
    assert cli.main(["train-order", "brackets", "--out", str(out), *ORDER_RUN]) == 0
    assert out.is_file()


def test_train_order_says_which_lengths_to_give(brackets, tmp_path, capsys):
    assert cli.main(["train-order", "brackets", "--out", str(tmp_path / "s.safetensors"), "--lengths", "8-40",
                     *ORDER_RUN]) == 2
    assert "give --lengths LO-HI with HI at most 16" in capsys.readouterr().err


def order_data(domain, **given) -> tuple:
    """``(draw, score, header, info)`` of the domain's order task at its options' defaults and ``given``."""
    from argparse import Namespace
    from dataclasses import fields

    from mi_core.order.loop import OrderTrainConfig

    task = domain.order_task
    args = Namespace(**{f.name: f.default for f in fields(task.options)} | given)
    return task.data(args, OrderTrainConfig(bf16=False), task.load(domain.model_default, "cpu"))


def drawn(draw, batches: int = 60) -> list[tuple[np.ndarray, np.ndarray]]:
    """``batches`` batches of ``draw`` as (start token ids, word token ids) rows."""
    rng = np.random.default_rng(0)
    return [(s, t + 1) for start, target in (draw(rng, 4) for _ in range(batches))
            for s, t in zip(start.numpy(), target.numpy())]


def test_the_order_task_trains_on_the_states_bench_order_decodes(brackets):
    """It trained on all-mask words of 16 only, while bench-order decodes partly masked words of 8-16: the selector
    put every position at P >= 0.5 and filled a word in one pass. Now it draws masked words of every even length
    8-16 from the training split, as the committed tuning and scored words were drawn from the held-out one."""
    from brackets.words import MASK_ID, held_out, is_dyck

    draw, score, _, _ = order_data(brackets, eval_per_length=4)
    rows = drawn(draw)
    assert {len(s) for s, _ in rows} == {8, 10, 12, 14, 16}
    masked = np.array([(s == MASK_ID).mean() for s, _ in rows])
    assert masked.min() > 0 and (masked < 1).mean() > 0.5  # givens in most states, a blank in each
    for start, word in rows:
        assert is_dyck(word) and not held_out(word)
        assert ((start == MASK_ID) | (start == word)).all()
    accuracy, passes = score(None, 3)  # validated as benched: the fraction top_margin decodes right at T = 3
    assert 0 < accuracy <= 1 and 1 <= passes <= 3


def test_train_order_takes_even_lengths_only(brackets, tmp_path, capsys):
    """``--lengths 8-12`` trained on windows that were no bracket words (of odd lengths too) and validated at 9
    and 11; an odd length is refused now, and 8-12 draws words of 8, 10 and 12."""
    from brackets.words import is_dyck

    assert cli.main(["train-order", "brackets", "--out", str(tmp_path / "s.safetensors"), "--lengths", "9-12",
                     *ORDER_RUN]) == 2
    assert "a bracket word has an even length, and 9 is odd" in capsys.readouterr().err
    assert not (tmp_path / "s.safetensors").exists()
    rows = drawn(order_data(brackets, lengths="8-12")[0])
    assert {len(s) for s, _ in rows} == {8, 10, 12} and all(is_dyck(w) for _, w in rows)


SHORT_RUN = ORDER_RUN[2:]  # without --steps-budget


def test_order_budgets_default_to_the_tasks_own_below_a_words_positions(brackets, words, tmp_path, capsys):
    """train-order and bench-order defaulted to Sudoku's 5,10,15,20: a selector trained and benched at 15 and 20 on
    words of at most 16 positions, where every word is decoded one position a pass. Now the brackets task's 3,5; on
    WORDS (at most 4 blanks to fill) bench-order names 5 as limiting nothing, 3 not."""
    out, rows = tmp_path / "sel.safetensors", tmp_path / "order.json"
    assert cli.main(["train-order", "brackets", "--out", str(out), *SHORT_RUN]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["train"]["budgets"] == [3, 5]
    assert cli.main(["bench-order", "brackets", "--puzzles", str(words), "--selector", str(out), "--gammas", "",
                     "--json", str(rows), "--threads", "1"]) == 0
    assert sorted({r["T"] for r in json.loads(rows.read_text()) if r["T"] is not None}) == [3, 5]
    err = capsys.readouterr().err
    assert ("note: --budgets 5: the input with the most positions to fill (its masked ones) has 4 positions, so at "
            "T >= 4") in err, err


def test_a_budget_at_or_above_a_words_positions_is_named(brackets, words, tmp_path, capsys):
    out = tmp_path / "sel.safetensors"
    assert cli.main(["train-order", "brackets", "--out", str(out), "--steps-budget", "3,16", *SHORT_RUN]) == 0
    assert ("note: --steps-budget 16: the longest start state has 16 positions, so at T >= 16 every state can be "
            "decoded one position a pass") in capsys.readouterr().err
    assert cli.main(["train-order", "brackets", "--out", str(out), "--steps-budget", "3,12", "--lengths", "8-10",
                     "--force", *SHORT_RUN]) == 0
    assert "note: --steps-budget 12: the longest start state has 10 positions" in capsys.readouterr().err
    assert cli.main(["bench-order", "brackets", "--puzzles", str(words), "--selector", str(out), "--budgets", "3,10",
                     "--gammas", "", "--json", str(tmp_path / "order.json"), "--threads", "1"]) == 0
    assert ("note: --budgets 10: the input with the most positions to fill (its masked ones) has 4 positions"
            in capsys.readouterr().err)


def test_a_task_declaring_no_budgets_gets_them_from_the_words(brackets, words, tmp_path, capsys, monkeypatch):
    """A sequence domain of varying length whose order task declares no budgets: derived from the positions of the
    longest state (--lengths 8-10) or, for bench-order, the most blanks an input has to fill (WORDS: 4 of 10, not its
    10 positions: T = 4 and 5 filled one blank a pass), none at or above them."""
    monkeypatch.setattr(brackets.order_task, "budgets", (), raising=False)
    out, rows = tmp_path / "sel.safetensors", tmp_path / "order.json"
    assert cli.main(["train-order", "brackets", "--out", str(out), "--lengths", "8-10", *SHORT_RUN]) == 0
    assert json.loads(out.with_suffix(".json").read_text())["train"]["budgets"] == [2, 3, 4, 5]
    assert ("note: --steps-budget unset: budgets T = 2,3,4,5, derived from the 10 positions of the longest start "
            "state") in capsys.readouterr().err
    assert cli.main(["bench-order", "brackets", "--puzzles", str(words), "--selector", str(out), "--gammas", "",
                     "--json", str(rows), "--threads", "1"]) == 0
    assert sorted({r["T"] for r in json.loads(rows.read_text()) if r["T"] is not None}) == [2, 3]
    err = capsys.readouterr().err
    assert "derived from the 4 positions of the input with the most positions to fill (its masked ones)" in err, err
    assert "limits nothing" not in err


def test_the_default_sweep_runs_no_more_passes_than_a_word_has_positions(brackets, words, tmp_path, capsys):
    """sweep's default grid ran mask_predict at 10 and 20 passes on words of at most 10 positions."""
    rows = tmp_path / "sweep.json"
    assert cli.main(["sweep", "brackets", "--puzzles", str(words), "--samplers", "mask_predict,topk", "--json",
                     str(rows), "--threads", "1"]) == 0
    swept = json.loads(rows.read_text())
    assert [(r["sampler"], r["params"]) for r in swept] == [("topk", {"k": k}) for k in (2, 4, 7)]
    assert "leaves out mask_predict steps=10, mask_predict steps=20" in capsys.readouterr().err


def test_a_domain_redefines_the_default_lengths():
    from mi_core.domain import get_domain

    protein = get_domain("protein").order_task.options
    assert protein.__dataclass_fields__["lengths"].default == "50-100"  # the protein task's own default


# -- 3. --min-len acts for every sequence domain -----------------------------------------------------------------------
TRAIN_RUN = ["--steps", "2", "--batch", "8", "--eval-every", "2", "--log-every", "2", "--eval-sequences", "10",
             "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32", "--train-words", "300",
             "--val-words", "20", "--warmup", "1", "--no-bf16", "--threads", "1"]


def test_train_min_len_leaves_out_short_sequences(brackets, tmp_path, capsys):
    out = tmp_path / "m.safetensors"
    assert cli.main(["train", "brackets", "--out", str(out), "--min-len", "14", *TRAIN_RUN]) == 0
    data = json.loads(out.with_suffix(".json").read_text())["data"]
    assert 0 < data["shorter_than_min_len"] < 300
    assert "shorter than --min-len 14 left out" in capsys.readouterr().out


def test_train_min_len_default_keeps_every_sequence(brackets, tmp_path):
    from mi_core.domain import get_domain

    out = tmp_path / "m.safetensors"
    assert cli.main(["train", "brackets", "--out", str(out), *TRAIN_RUN]) == 0
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["train"]["min_len"] == 1 and "shorter_than_min_len" not in meta["data"]
    assert get_domain("protein").trainer.train_config().min_len == 30  # the protein task's own default


# -- 4. probe and estimate name a pair by the domain's labels ---------------------------------------------------------
def named_pair(out: str) -> str:
    return re.search(r"between (\w+ \S+ and \S+)", out).group(1)


def strongest(path: Path) -> tuple[int, int]:
    mi = np.asarray(json.loads(path.read_text())["mi"])
    return divmod(int(mi.argmax()), len(mi))


def test_probe_and_estimate_name_pairs_alike(brackets, tmp_path, capsys):
    state, model = "(__)[__]", brackets.model_default
    probe_json, est_json = tmp_path / "p.json", tmp_path / "e.json"
    assert cli.main(["probe", "brackets", "--state", state, "--json", str(probe_json), "--no-progress"]) == 0
    probe_out = capsys.readouterr().out
    assert cli.main(["estimate", "brackets", "--state", state, "--model", model, "--json", str(est_json),
                     "--threads", "1"]) == 0
    est_out = capsys.readouterr().out
    for out, path in ((probe_out, probe_json), (est_out, est_json)):
        i, j = strongest(path)
        assert named_pair(out) == f"positions {i + 1} and {j + 1}", out
        assert "residue" not in out and "4 masked positions" in out


def test_estimate_auto_falls_back_to_the_domains_model(brackets, tmp_path, capsys):
    """The shipped estimator's JSON names the model file it was trained on elsewhere: ``--model auto`` then
    loads the domain's own model (the same weights), not a model named ``auto``."""
    copy = copy_estimator(brackets, tmp_path, mdm=str(tmp_path / "gone" / "brackets_mdm.safetensors"))
    assert cli.main(["estimate", "brackets", "--state", "(__)[__]", "--estimator", str(copy),
                     "--threads", "1"]) == 0, capsys.readouterr().err


def test_pair_labels_follow_each_domain(brackets):
    from mi_core.commands.probe import strongest_pair
    from mi_core.domain import get_domain

    mi = torch.zeros(81, 81)
    mi[1, 20] = 0.5
    assert strongest_pair(mi, get_domain("sudoku"), 81).endswith("between cells r1c2 and r3c3")
    for name in ("protein", "antibody"):
        assert strongest_pair(mi, get_domain(name), 81).endswith("between residues 2 and 21")
    assert strongest_pair(mi, brackets, 81).endswith("between positions 2 and 21")
    assert strongest_pair(torch.zeros(4, 4), brackets, 4) == "every MI is 0: no two masked positions depend on each other"


def test_the_selector_variable_names_a_selector_train_order_made(brackets, tmp_path, monkeypatch, capsys):
    """The domain offered ``$MI_LENS_BRACKETS_SELECTOR`` for the selector ``train-order brackets`` makes, but a
    domain could name a selector variable only beside a shipped selector, so nothing read it: ``learned`` stayed
    "ships none". Now the variable alone serves the commands (and the app, through ``selector_path``)."""
    from mi_core.decoding.selector import make_order_nets, save_order_net

    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(64)[1], selector, {"domain": "brackets"})
    argv = ["generate", "brackets", "--length", "8", "--sampler", "learned", "--n", "1", "--threads", "1"]
    monkeypatch.delenv("MI_LENS_BRACKETS_SELECTOR", raising=False)
    assert brackets.selector_path() is None and brackets.default_file("selector") is None
    assert cli.main(argv) == 2
    assert "$MI_LENS_BRACKETS_SELECTOR names it" in capsys.readouterr().err
    monkeypatch.setenv("MI_LENS_BRACKETS_SELECTOR", str(selector))
    assert brackets.selector_path() == selector and brackets.default_file("selector") == str(selector)
    assert cli.main(argv) == 0
    assert f"sampler=learned selector={selector} " in capsys.readouterr().out  # the header names what made it


def test_generate_names_the_files_shipped_resolved_to(brackets, tmp_path, monkeypatch, capsys):
    """``--set selector=shipped`` (and ``estimator=shipped``) wrote the word ``shipped`` into each design's header,
    not the file it read: now the header names the file, as it does for one the domain gave unasked."""
    from mi_core.decoding.selector import make_order_nets, save_order_net

    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(64)[1], selector, {"domain": "brackets"})
    monkeypatch.setenv("MI_LENS_BRACKETS_SELECTOR", str(selector))
    run = ["generate", "brackets", "--length", "8", "--n", "1", "--threads", "1"]
    assert cli.main([*run, "--sampler", "learned", "--set", "selector=shipped"]) == 0
    assert f"sampler=learned selector={selector} " in capsys.readouterr().out
    assert cli.main([*run, "--sampler", "mi", "--set", "estimator=shipped"]) == 0
    assert f"sampler=mi estimator={display_path(shipped_estimator(brackets))} " in capsys.readouterr().out


def test_bench_and_bench_order_refuse_a_state_the_domain_refuses(brackets, tmp_path, capsys):
    """A file's line went through ``parse_state`` alone: ``(((`` (odd, 3 long, no word keeps it) was decoded and
    scored as a wrong answer; it is refused, naming its line, as a typed state is."""
    odd = tmp_path / "odd.txt"
    odd.write_text("(__)[__]\n(((\n")
    for argv in (["bench", "brackets", "--puzzles", str(odd)],
                 ["bench-order", "brackets", "--puzzles", str(odd), "--budgets", "3", "--json", str(tmp_path / "o.json")]):
        assert cli.main([*argv, "--threads", "1", "--device", "cpu"]) == 2
        assert "odd.txt, line 2: a Dyck-2 word has an even length 8-16, got 3" in capsys.readouterr().err


def test_generate_refuses_a_length_the_domain_refuses(brackets, capsys):
    """``generate brackets --length 9`` filled 9 positions, which no bracket word can be."""
    assert cli.main(["generate", "brackets", "--length", "9", "--threads", "1", "--device", "cpu"]) == 2
    assert capsys.readouterr().err.strip() == ("error: --length 9: the brackets domain generates from all-masked "
                                               "sequences of 8, 10, 12, 14 or 16 positions only; give one of those "
                                               "lengths, or a --template to fill")
    assert cli.main(["generate", "brackets", "--length", "8", "--n", "1", "--threads", "1", "--device", "cpu"]) == 0


def test_a_state_file_with_a_bom_or_in_latin1_is_read_or_named(brackets, tmp_path):
    """A plugin domain's state file saved by Notepad as 'UTF-8 with BOM' was refused for an invisible U+FEFF at
    position 1 of line 1, and one in Latin-1 ended in "error: 'utf-8' codec can't decode byte 0xe9", naming no file."""
    bom = tmp_path / "bom.txt"
    bom.write_bytes("\ufeff(__)[__]\r\n([__])__  \r\n".encode("utf-8"))
    templates, _, _ = brackets.read_inputs(bom)
    assert [brackets.state_text(t) for t in templates] == ["(__)[__]", "([__])__"]
    latin = tmp_path / "latin.txt"
    latin.write_bytes("# r\xe9sum\xe9\n(__)[__]\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.txt is not UTF-8 text \(byte 4, b'\\xe9': written in Latin-1 or Windows-1252\?\): save it as UTF-8"):
        brackets.read_inputs(latin)
