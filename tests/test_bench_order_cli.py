"""``bench-order``'s command line reads as every other command's: ``--markdown FILE`` (its own section updated in
place, the rest of the file kept), fp32 forward passes unless ``--bf16``, its input files required in the help,
progress rows as JSON lines and a report in words, not Python reprs. Runs are short: the tiny MDM, a random
selector, two puzzles, T = 2 only."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import torch

from mi_core.bench.report import read_kept
from mi_core.cli import main as cli_main
from mi_core.decoding.selector import make_order_nets, save_order_net

SECTION = "<!-- bench-order-sudoku9:start -->"


@pytest.fixture
def sudoku_args(tmp_path, model_path):
    """The arguments of a short ``bench-order sudoku`` run (no ``--json``): one Easy and one Hard puzzle."""
    from mi_core.domains.sudoku import to_string
    from mi_core.domains.sudoku.generator import random_puzzle

    csv = tmp_path / "p.csv"
    lines = ["puzzle,solution,level"]
    for seed, level in [(0, "Easy"), (1, "Hard")]:
        puzzle, solution = random_puzzle(30, seed)
        lines.append(f"{to_string(puzzle)},{to_string(solution)},{level}")
    csv.write_text("\n".join(lines) + "\n")
    torch.manual_seed(1)
    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(32)[1].eval(), selector)
    return ["bench-order", "sudoku", "--puzzles", str(csv), "--model", str(model_path), "--selector", str(selector),
            "--per-level", "1", "--budgets", "2", "--gammas", "", "--learned-mi-gammas", "", "--threads", "1"]


def test_the_report_goes_to_markdown_not_md(sudoku_args, tmp_path, capsys):
    out, md = tmp_path / "rows.json", tmp_path / "report.md"
    assert cli_main([*sudoku_args, "--json", str(out), "--md", str(md)]) == 2
    assert "unrecognized arguments: --md" in capsys.readouterr().err
    assert cli_main([*sudoku_args, "--json", str(out), "--markdown", str(md)]) == 0
    assert "### T = 2" in md.read_text() and not out.with_suffix(".md").exists()
    # -: the report on standard output, no file
    capsys.readouterr()
    assert cli_main([*sudoku_args, "--json", str(out), "--force", "--markdown", "-"]) == 0
    assert "### T = 2" in capsys.readouterr().out and not (tmp_path / "-").exists()
    # the default stays the --json path with .md
    assert cli_main([*sudoku_args, "--json", str(tmp_path / "other.json")]) == 0
    assert "### T = 2" in (tmp_path / "other.md").read_text()


def test_markdown_updates_its_own_section_and_keeps_the_rest(sudoku_args, tmp_path):
    """A user's notes survive (``--force`` once replaced the whole file); a rerun replaces the section."""
    out, notes = tmp_path / "rows.json", tmp_path / "notes.md"
    notes.write_text("# My notes\n\nkeep this line\n")
    assert cli_main([*sudoku_args, "--json", str(out), "--markdown", str(notes)]) == 0
    assert cli_main([*sudoku_args, "--json", str(out), "--markdown", str(notes), "--force", "--seed", "7"]) == 0
    text = notes.read_text()
    assert text.startswith("# My notes\n\nkeep this line\n")
    assert text.count(SECTION) == 1 and text.count("### T = 2") == 1
    assert "--seed 7" in text.split(SECTION, 1)[1]  # the section holds the second run and names its command


def test_fp32_unless_bf16(sudoku_args, tmp_path, monkeypatch):
    """fp32 by default as in every other command; ``--bf16`` opts in; ``--no-bf16`` (old command lines) still runs."""
    from mi_core.domains.sudoku import bench_order

    seen = []

    def evaluate(*args, bf16, **kwargs):
        seen.append(bf16)
        return real(*args, bf16=bf16, **kwargs)

    real = bench_order.evaluate
    monkeypatch.setattr(bench_order, "evaluate", evaluate)
    out = tmp_path / "rows.json"
    for extra, bf16 in [([], False), (["--bf16"], True), (["--no-bf16"], False)]:
        seen.clear()
        assert cli_main([*sudoku_args, "--json", str(out), "--force", *extra]) == 0
        assert seen and set(seen) == {bf16}
        assert f"{'bf16' if bf16 else 'fp32'} forward passes" in out.with_suffix(".md").read_text()


def test_input_files_are_required_in_the_help(tmp_path, capsys, monkeypatch):
    from mi_core.domains.protein import bench_order as protein_bench
    from mi_core.domains.sudoku import bench_order as sudoku_bench

    for command, flag, module in [("sudoku", "--puzzles", sudoku_bench), ("protein", "--reference", protein_bench)]:
        try:
            code = cli_main(["bench-order", command, "--help"])
        except SystemExit as stop:
            code = stop.code
        help_text = capsys.readouterr().out
        assert code == 0
        usage = " ".join(help_text.split("options:")[0].split())
        assert f" {flag} {flag[2:].upper()} " in usage and f"[{flag}" not in usage  # required: not in [ ]
        assert "(required)" in help_text.split(f"  {flag} ", 1)[1].split("\n  --", 1)[0]
        monkeypatch.setattr(module, "run_bench", lambda *a: pytest.fail("the run started"))
        assert cli_main(["bench-order", command, "--json", str(tmp_path / "x.json")]) == 2
        assert f"the following arguments are required: {flag}" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_sudoku_rows_are_json_lines_and_the_report_is_text(sudoku_args, tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert cli_main([*sudoku_args, "--json", str(out)]) == 0
    captured = capsys.readouterr()
    printed = [json.loads(line) for line in captured.out.splitlines() if line.startswith("{")]
    assert [r["sampler"] for r in printed] == [r["sampler"] for r in json.loads(out.read_text())]
    assert f"{len(printed)}/{len(printed)} " in captured.err  # the bar counted every row, and no more
    report = out.with_suffix(".md").read_text()
    assert "{" not in report.split("`\n\n", 1)[1]  # no dict repr anywhere (by level, passes used), after the command
    sequential = next(r for r in printed if r["sampler"] == "sequential")
    assert (f"by level Easy {sequential['by_level']['Easy']:.3f}, Hard {sequential['by_level']['Hard']:.3f}."
            in report)


def test_protein_rows_are_json_lines(tmp_path, capsys):
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    torch.manual_seed(0)
    model, selector, fasta = tmp_path / "p.safetensors", tmp_path / "s.safetensors", tmp_path / "ref.fa"
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=128, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(), model)
    save_order_net(make_order_nets(32)[1], selector)
    rng = np.random.default_rng(0)
    amino = list("ACDEFGHIKLMNPQRSTVWY")
    fasta.write_text("".join(f">dom{i}\n{''.join(rng.choice(amino, int(rng.integers(40, 90))))}\n" for i in range(400)))
    out = tmp_path / "b.json"
    assert cli_main(["bench-order", "protein", "--reference", str(fasta), "--model", str(model), "--selector",
                     str(selector), "--samples", "2", "--lengths", "10-12", "--seeds", "0", "--budgets", "2",
                     "--gammas", "", "--json", str(out), "--threads", "1"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert not any(line.startswith("{'") for line in lines)
    printed = [json.loads(line) for line in lines if line.startswith("{")]
    assert f"{len(printed)}/{len(printed)} " in captured.err
    assert [(r["sampler"], r["seed"]) for r in printed] == [(r["sampler"], r["seed"])
                                                           for r in json.loads(out.read_text())["rows"]]


def test_a_users_own_protein_model_without_a_selector_gets_the_heuristic_rows(tmp_path, capsys, monkeypatch):
    """As for Sudoku: ``bench-order protein --model MINE`` without --selector stopped at once on the shipped selector
    of another model; its heuristic rows now run and the learned ones are skipped with a note."""
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    monkeypatch.delenv("MI_LENS_PROTEIN_SELECTOR", raising=False)
    torch.manual_seed(0)
    model, fasta = tmp_path / "p.safetensors", tmp_path / "ref.fa"
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=128, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(), model)
    rng = np.random.default_rng(0)
    amino = list("ACDEFGHIKLMNPQRSTVWY")
    fasta.write_text("".join(f">dom{i}\n{''.join(rng.choice(amino, int(rng.integers(40, 90))))}\n" for i in range(400)))
    out = tmp_path / "b.json"
    assert cli_main(["bench-order", "protein", "--reference", str(fasta), "--model", str(model), "--samples", "2",
                     "--lengths", "10-12", "--seeds", "0", "--budgets", "2", "--gammas", "", "--json", str(out),
                     "--threads", "1"]) == 0
    assert "note: the learned rows are skipped" in capsys.readouterr().err
    payload = json.loads(out.read_text())
    assert payload["selector"] is None and {r["sampler"] for r in payload["rows"]} == {"random", "top_prob",
                                                                                      "top_margin"}


def test_the_jsons_own_report_is_replaced_whole_on_a_rerun(sudoku_args, tmp_path):
    """Without --markdown the report is the JSON's own file: a rerun with --force replaces it (the committed
    reports have no section markers, so a section would have been added below the old report)."""
    out = tmp_path / "rows.json"
    assert cli_main([*sudoku_args, "--json", str(out)]) == 0
    first = out.with_suffix(".md").read_text()
    assert cli_main([*sudoku_args, "--json", str(out), "--force"]) == 0
    again = out.with_suffix(".md").read_text()
    assert again.count("Reference: sequential") == first.count("Reference: sequential") == 1


def test_json_rows_named_md_are_not_written_over_by_the_report(sudoku_args, tmp_path, capsys):
    """--json rows.md: the report beside the JSON (its path with .md) is the same file, and replaced the rows."""
    out = tmp_path / "rows.md"
    assert cli_main([*sudoku_args, "--json", str(out)]) == 2 and not out.exists()
    assert f"error: --json {out} is the file its .md report goes to" in capsys.readouterr().err


@pytest.mark.parametrize("spec", ["2:-1", "2:nan", "0:4"])
def test_a_bad_learned_mi_gamma_fails_before_any_row(sudoku_args, tmp_path, capsys, spec):
    """``--learned-mi-gammas 2:-1`` decoded six rows first and then failed inside learned_mi."""
    out = tmp_path / "rows.json"
    args = sudoku_args[:-4] + ["--learned-mi-gammas", spec, "--threads", "1", "--json", str(out)]
    assert cli_main(args) == 2
    got = capsys.readouterr()
    assert f"error: --learned-mi-gammas {spec}:" in got.err and "finite number >= 0" in got.err
    assert '"sampler"' not in got.out and not out.exists()


def test_a_budget_without_a_learned_mi_gamma_is_named(sudoku_args, tmp_path, capsys):
    """``--budgets 2`` with gammas for 5 and 3 only left learned_mi out of the rows without a word."""
    out = tmp_path / "rows.json"
    args = sudoku_args[:-4] + ["--learned-mi-gammas", "5:8,3:4", "--threads", "1", "--json", str(out)]
    assert cli_main(args) == 0
    got = capsys.readouterr()
    assert "note: --learned-mi-gammas 5:8,3:4 has no gamma for budget(s) 2: learned_mi is left out" in got.err
    assert "learned_mi" not in {r["sampler"] for r in json.loads(out.read_text())}


def test_budgets_outside_the_selectors_training_are_named(sudoku_args, tmp_path, capsys):
    """A selector trained at T = 5..10 run at T = 2 extrapolates: the run says so (it said nothing)."""
    selector = tmp_path / "trained.safetensors"
    save_order_net(make_order_nets(32)[1].eval(), selector, {"train": {"budgets": [10, 5]}})
    args = [*sudoku_args, "--json", str(tmp_path / "rows.json")]
    args[args.index("--selector") + 1] = str(selector)
    assert cli_main(args) == 0
    assert f"note: {selector} was trained at budgets 5,10; its choices at 2 are extrapolated" in capsys.readouterr().err
    assert cli_main([*sudoku_args, "--json", str(tmp_path / "plain.json")]) == 0  # no budgets recorded: no note
    assert "extrapolated" not in capsys.readouterr().err


def test_sudoku_mi_rows_read_the_estimator_given_or_are_skipped(sudoku_args, model_path, tmp_path, capsys,
                                                                 monkeypatch):
    """A user's own model: ``bench-order sudoku`` once stopped at its first learned_mi row with "no shipped MI
    estimator was trained on ...: give estimator=PATH", an option it did not have, the rows before it lost. Now
    ``--estimator`` is read by the mi and learned_mi rows (recorded in them), a file trained on other weights is
    refused before any row decodes, and without one those rows are skipped with a note."""
    from mi_core.domains.sudoku import bench_order
    from mi_core.io import file_sha256
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator

    args = [a for a in sudoku_args if a not in ("--gammas", "--learned-mi-gammas", "")]
    args += ["--gammas", "0.5", "--learned-mi-gammas", "2:1"]
    out = tmp_path / "rows.json"
    assert cli_main([*args, "--json", str(out)]) == 0
    assert "the mi and learned_mi rows are skipped (give --estimator PATH)" in capsys.readouterr().err
    assert {r["sampler"] for r in json.loads(out.read_text())} == {"random", "top_prob", "top_margin", "learned",
                                                                   "eb", "sequential"}
    torch.manual_seed(0)
    est = tmp_path / "est.safetensors"
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est,
                   {"mdm": str(model_path), "mdm_sha256": file_sha256(model_path)})
    assert cli_main([*args, "--json", str(out), "--force", "--estimator", str(est)]) == 0
    rows = json.loads(out.read_text())
    mi_rows = [r for r in rows if r["sampler"] in ("mi", "learned_mi")]
    assert len(mi_rows) == 3 and all(r["estimator_sha256"] == file_sha256(est) for r in mi_rows)
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est,
                   {"mdm": "other.safetensors", "mdm_sha256": "0" * 64})
    monkeypatch.setattr(bench_order, "evaluate", lambda *a, **k: pytest.fail("a row decoded"))
    capsys.readouterr()
    assert cli_main([*args, "--json", str(out), "--force", "--estimator", str(est)]) == 2
    assert "was trained on other.safetensors, not on" in capsys.readouterr().err


def test_a_users_own_model_without_a_selector_gets_the_heuristic_rows(sudoku_args, tmp_path, capsys, monkeypatch):
    """``bench-order sudoku --model MINE`` without --selector stopped at once: "the order selector assets/... reads
    hidden size 128, the model gives 32", so the heuristics could not be compared on a model with no selector yet,
    though the mi rows of a missing estimator are skipped with a note. The learned rows are now skipped so; a
    --selector given that does not fit is still refused."""
    monkeypatch.delenv("MI_LENS_SUDOKU_SELECTOR", raising=False)
    at = sudoku_args.index("--selector")
    args = sudoku_args[:at] + sudoku_args[at + 2:]
    out = tmp_path / "rows.json"
    assert cli_main([*args, "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "note: the learned rows are skipped: the default order selector" in err and "does not fit" in err
    assert [r["sampler"] for r in json.loads(out.read_text())] == ["random", "top_prob", "top_margin", "sequential"]
    torch.manual_seed(1)
    wide = tmp_path / "wide.safetensors"
    save_order_net(make_order_nets(64)[1].eval(), wide)
    assert cli_main([*args, "--json", str(out), "--force", "--selector", str(wide)]) == 2
    assert "reads hidden size 64, the model gives 32" in capsys.readouterr().err


def test_protein_estimator_is_checked_before_any_row_and_recorded(tmp_path, capsys, monkeypatch):
    """`bench-order protein --estimator` of another domain (or of other weights) ran every heuristic row, then
    stopped at the first mi row; now it is refused first, and the one used is in the JSON."""
    from mi_core.domains.protein import bench_order as protein_bench
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
    from mi_core.io import file_sha256
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator

    torch.manual_seed(0)
    model, selector, fasta = tmp_path / "p.safetensors", tmp_path / "s.safetensors", tmp_path / "ref.fa"
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(), model)
    save_order_net(make_order_nets(32)[1], selector)
    rng = np.random.default_rng(0)
    fasta.write_text("".join(f">dom{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 40))}\n" for i in range(200)))
    sudoku_est, protein_est = tmp_path / "sudoku_est.safetensors", tmp_path / "protein_est.safetensors"
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), sudoku_est, {"domain": "sudoku"})
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=20, rel_buckets=16)), protein_est,
                   {"domain": "protein", "mdm": str(model), "mdm_sha256": file_sha256(model)})
    out = tmp_path / "b.json"
    argv = ["bench-order", "protein", "--reference", str(fasta), "--model", str(model), "--selector", str(selector),
            "--samples", "2", "--lengths", "10-12", "--seeds", "0", "--budgets", "2", "--gammas", "8",
            "--json", str(out), "--threads", "1"]
    real = protein_bench.evaluate
    monkeypatch.setattr(protein_bench, "evaluate", lambda *a, **k: pytest.fail("a row decoded"))
    assert cli_main([*argv, "--estimator", str(sudoku_est)]) == 2
    assert f"the estimator {sudoku_est} is an estimator of sudoku, not protein" in capsys.readouterr().err
    monkeypatch.setattr(protein_bench, "evaluate", real)
    assert cli_main([*argv, "--estimator", str(protein_est)]) == 0
    payload = json.loads(out.read_text())
    assert payload["estimator"] == str(protein_est) and [r for r in payload["rows"] if r["sampler"] == "mi"]


def test_bench_order_protein_is_seeded_by_its_seeds_alone(tmp_path, capsys):
    """bench-order protein seeds every run with --seeds: it also took a --seed that changed nothing (--seed 5 wrote
    --seed 0's report); now --seed is not offered, and is refused (no option is read from its first letters)."""
    from mi_core.cli import parse

    fasta = tmp_path / "r.fa"
    fasta.write_text(">a\nMKTAYIAKQRQISFVK\n")
    assert cli_main(["bench-order", "protein", "--help"]) == 0
    assert "--seed " not in capsys.readouterr().out
    assert cli_main(["bench-order", "protein", "--reference", str(fasta), "--json", str(tmp_path / "o.json"),
                     "--seed", "5"]) == 2
    assert "error: unrecognized arguments: --seed 5; did you mean --seeds?" in capsys.readouterr().err
    _, args = parse(["bench-order", "protein", "--reference", str(fasta), "--json", str(tmp_path / "o.json"),
                     "--seeds", "5"])
    assert args.seeds == [5] and not hasattr(args, "seed")


def stop_at(monkeypatch, module, row: int) -> list:
    """Make ``module.evaluate`` raise KeyboardInterrupt (a Ctrl-C there) when its ``row``-th row begins (0: never);
    the list returned counts the rows begun."""
    calls, real = [], module.evaluate

    def stops(*args, **kwargs):
        calls.append(1)
        if len(calls) == row:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate", stops)
    return calls


def stop(*args, **kwargs):
    raise KeyboardInterrupt


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_a_stopped_bench_order_keeps_its_rows_and_resumes(sudoku_args, tmp_path, capsys, monkeypatch):
    """bench-order (15 min for two budgets of the Sudoku levels) kept nothing when stopped: its JSON is written at
    the end. Each finished row is kept in ``OUT.json.partial``; ``--resume`` runs only the rest."""
    from mi_core.domains.sudoku import bench_order

    whole, out = tmp_path / "whole.json", tmp_path / "rows.json"
    assert cli_main([*sudoku_args, "--json", str(whole)]) == 0
    partial = tmp_path / "rows.json.partial"
    stop_at(monkeypatch, bench_order, 4)
    capsys.readouterr()
    assert cli_main([*sudoku_args, "--json", str(out)]) == 130
    err = capsys.readouterr().err
    assert f"{partial} keeps the finished rows: add --resume to the same command to continue" in err
    assert not out.exists() and len(read_kept(partial)[1]) == 3
    assert cli_main([*sudoku_args, "--json", str(out)]) == 2  # neither --resume nor --force: refused
    assert "holds the finished rows of an interrupted bench-order: add --resume" in capsys.readouterr().err
    assert cli_main([*sudoku_args, "--json", str(out), "--resume", "--seed", "3"]) == 2  # other settings
    assert "was a run of other settings (--seed 0 there, 3 now)" in capsys.readouterr().err
    calls = stop_at(monkeypatch, bench_order, 0)
    assert cli_main([*sudoku_args, "--json", str(out), "--resume"]) == 0
    assert "3 rows already run" in capsys.readouterr().err
    rows = json.loads(out.read_text())
    assert len(calls) == len(rows) - 3 and not partial.exists()
    assert without_seconds(rows) == without_seconds(json.loads(whole.read_text()))
    assert "--resume" not in out.with_suffix(".md").read_text()  # the report names the command to run again
    assert cli_main([*sudoku_args, "--json", str(out), "--resume", "--force"]) == 2  # nothing left to resume
    assert "--resume: no interrupted bench-order" in capsys.readouterr().err


def test_a_resumed_run_stopped_before_its_first_new_row_names_the_kept_rows(sudoku_args, tmp_path, capsys, monkeypatch):
    """The stop line named the .partial file only once this run had written a row: a resumed run stopped while its
    first new row decoded said nothing of the rows kept from before, and how to go on."""
    from mi_core.domains.sudoku import bench_order

    out, partial = tmp_path / "rows.json", tmp_path / "rows.json.partial"
    stop_at(monkeypatch, bench_order, 3)
    assert cli_main([*sudoku_args, "--json", str(out)]) == 130
    stop_at(monkeypatch, bench_order, 1)
    capsys.readouterr()
    assert cli_main([*sudoku_args, "--json", str(out), "--resume"]) == 130
    assert f"{partial} keeps the finished rows: add --resume to the same command to continue" in capsys.readouterr().err
    monkeypatch.setattr(bench_order, "load_sudoku_mdm", stop)  # stopped while the model loads
    assert cli_main([*sudoku_args, "--json", str(out), "--resume"]) == 130
    assert f"{partial} keeps the finished rows: add --resume to the same command to continue" in capsys.readouterr().err
    assert len(read_kept(partial)[1]) == 2


def test_a_stop_between_the_json_and_its_report_resumes_both(sudoku_args, tmp_path, capsys, monkeypatch):
    """The JSON and its .md report are two writes: stopped between them, the rows were in the JSON and the report
    missing, and the same command refused the JSON without --force. The rows stay kept until both are written."""
    from mi_core.bench import order
    from mi_core.domains.sudoku import bench_order

    out, real = tmp_path / "rows.json", order.atomic_write_text
    monkeypatch.setattr(order, "atomic_write_text", stop)
    assert cli_main([*sudoku_args, "--json", str(out)]) == 130
    assert out.is_file() and not out.with_suffix(".md").exists()
    monkeypatch.setattr(order, "atomic_write_text", real)
    calls = stop_at(monkeypatch, bench_order, 0)
    assert cli_main([*sudoku_args, "--json", str(out), "--resume"]) == 0
    assert not calls and "### T = 2" in out.with_suffix(".md").read_text()  # no row run again
    assert not (tmp_path / "rows.json.partial").exists()


def test_a_stop_as_the_kept_rows_are_removed_does_not_name_them(sudoku_args, tmp_path, capsys, monkeypatch):
    """Both files written, the .partial is removed: a stop just then said the removed file kept the rows."""
    import pathlib
    import signal

    real = pathlib.Path.unlink

    def unlink(self, *args, **kwargs):
        real(self, *args, **kwargs)
        if self.name.endswith(".partial"):
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(pathlib.Path, "unlink", unlink)
    out = tmp_path / "rows.json"
    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # a server test may have left its own
    try:
        assert cli_main([*sudoku_args, "--json", str(out)]) == 130
    finally:
        signal.signal(signal.SIGINT, before)
    err = capsys.readouterr().err
    assert not (tmp_path / "rows.json.partial").exists() and "interrupted (Ctrl-C)" in err and ".partial" not in err


def test_a_resume_refused_for_a_setting_this_run_lacks_names_it(sudoku_args, tmp_path, capsys, monkeypatch):
    """Rows kept under a setting this run has not (an option of another version) were refused as 'a run of other
    settings ()', naming nothing."""
    from mi_core.domains.sudoku import bench_order

    out, partial = tmp_path / "rows.json", tmp_path / "rows.json.partial"
    stop_at(monkeypatch, bench_order, 2)
    assert cli_main([*sudoku_args, "--json", str(out)]) == 130
    settings, rows, _ = read_kept(partial)
    partial.write_text(json.dumps({"settings": {**settings, "old_option": 3}, "rows": rows}))  # as versions before 1 line a row
    capsys.readouterr()
    assert cli_main([*sudoku_args, "--json", str(out), "--resume"]) == 2
    assert "was a run of other settings (--old-option 3 there, None now)" in capsys.readouterr().err

@pytest.mark.parametrize("kept", ["other settings", "not a record"])
def test_a_refused_resume_with_force_says_force_starts_again_without_resume(sudoku_args, tmp_path, capsys, kept):
    """``--resume --force`` resumes (--force lets it write over the files): refused, it was told to give --force,
    which it had."""
    out, partial = tmp_path / "rows.json", tmp_path / "rows.json.partial"
    partial.write_text(json.dumps({"settings": {}, "rows": []}) if kept == "other settings" else "[]")
    assert cli_main([*sudoku_args, "--json", str(out), "--resume", "--force"]) == 2
    assert "--force without --resume to start again" in capsys.readouterr().err
    assert cli_main([*sudoku_args, "--json", str(out), "--force"]) == 0 and not partial.exists()

def test_a_resume_under_another_default_model_is_refused(tmp_path, capsys, monkeypatch):
    """bench-order protein without --model reads the model its environment variable names; resumed under another,
    the first model's rows were kept beside the second's (the settings named no model). The file read is compared."""
    from mi_core.domains.protein import bench_order as protein_bench
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    first, second = tmp_path / "first.safetensors", tmp_path / "second.safetensors"
    for seed, path in ((0, first), (1, second)):
        torch.manual_seed(seed)
        save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(),
                         path)
    selector, fasta = tmp_path / "s.safetensors", tmp_path / "ref.fa"
    save_order_net(make_order_nets(32)[1], selector)
    rng = np.random.default_rng(0)
    fasta.write_text("".join(f">dom{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 40))}\n" for i in range(200)))
    argv = ["bench-order", "protein", "--reference", str(fasta), "--selector", str(selector), "--samples", "2",
            "--lengths", "10-12", "--seeds", "0", "--budgets", "2", "--gammas", "", "--json", str(tmp_path / "o.json"),
            "--threads", "1"]
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(first))
    stop_at(monkeypatch, protein_bench, 3)
    assert cli_main(argv) == 130
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(second))
    calls = stop_at(monkeypatch, protein_bench, 0)
    capsys.readouterr()
    assert cli_main([*argv, "--resume"]) == 2 and not calls
    err = capsys.readouterr().err  # the files by path and the start of their sha256 (it printed ['path', 'sha'])
    assert re.search(rf"was a run of other settings \(--model {re.escape(str(first))} \(sha256 [0-9a-f]{{12}}\) "
                     rf"there, {re.escape(str(second))} \(sha256 [0-9a-f]{{12}}\) now\)", err), err
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(first))
    assert cli_main([*argv, "--resume"]) == 0 and len(calls) == 3


def test_a_resume_compares_the_device_picked_not_its_name():
    """--device auto was compared as text: stopped with cpu and resumed with auto on the same CPU it was refused, and
    stopped with auto on a CPU and resumed with auto where CUDA is present, its rows would mix."""
    from argparse import Namespace

    from mi_core.bench.report import run_identity

    picked = "cuda" if torch.cuda.is_available() else "cpu"
    assert run_identity(Namespace(device="auto", seed=0))["device"] == picked
    assert run_identity(Namespace(device="auto", seed=0)) == run_identity(Namespace(device=picked, seed=0))


def test_a_list_setting_that_differs_is_named_as_it_is_typed():
    """A resume refused for other budgets said ``--budgets [3, 5] there, [3, 5, 7] now``, a Python list."""
    from mi_core.bench.report import settings_difference

    assert settings_difference({"budgets": [3, 5]}, {"budgets": [3, 5, 7]}, "--") == "--budgets 3,5 there, 3,5,7 now"
