import hashlib
import json

import pytest

from mi_core.bench.report import partial_path
from mi_core.cli import main

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
EASY_SOL = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
OTHER = "...8.1..........435............7.8........1...2..3....6......75..34........2..6.."


def test_bench_writes_documented_json(tmp_path, model_path):
    puzzles = tmp_path / "p.csv"
    puzzles.write_text(f"puzzle,solution,level\n{EASY},{EASY_SOL},Easy\n{EASY},,Hard\n{EASY},{EASY_SOL},Hard\n")
    out = tmp_path / "out.json"
    rc = main(["bench", "sudoku", "--puzzles", str(puzzles), "--sampler", "topk", "--set", "k=4",
               "--json", str(out), "--model", str(model_path), "--device", "cpu"])
    assert rc == 0
    res = json.loads(out.read_text())
    for key in ("n", "accuracy", "cell_accuracy", "mean_passes", "sampler", "params", "seconds", "model_params", "by_level"):
        assert key in res
    assert res["n"] == 3 and res["sampler"] == "topk" and res["params"] == {"k": 4}
    assert res["mean_passes"] == pytest.approx(56 / 4)  # 56 blanks, 4 per pass
    assert set(res["by_level"]) == {"Easy", "Hard"} and res["by_level"]["Hard"]["n"] == 2
    assert 0 <= res["cell_accuracy"] <= 1 and len(res["passes"]) == 3
    assert res["model_sha256"] == hashlib.sha256(model_path.read_bytes()).hexdigest()  # what checked_on records name


def test_bench_txt_without_levels_solves_with_solver(tmp_path, model_path):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(f"{OTHER}\n{EASY}\n")
    out = tmp_path / "o.json"
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--limit", "1", "--json", str(out),
                 "--model", str(model_path)]) == 0
    res = json.loads(out.read_text())
    assert res["n"] == 1 and "by_level" not in res and res["mean_passes"] == OTHER.count(".")
    assert res["precision"] == "fp32"
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--limit", "1", "--json", str(out),
                 "--model", str(model_path), "--bf16"]) == 2  # the file exists: refused without --force
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--limit", "1", "--json", str(out),
                 "--model", str(model_path), "--bf16", "--force"]) == 0
    res16 = json.loads(out.read_text())
    assert res16["precision"] == "bf16" and res16["mean_passes"] == res["mean_passes"]


def test_bf16_on_a_cpu_without_it_warns(tmp_path, model_path, monkeypatch, capsys):
    import mi_core.device

    monkeypatch.setattr(mi_core.device, "slow_bf16", lambda device: "warning: emulated bf16")
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(f"{EASY}\n")
    args = ["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--device", "cpu"]
    assert main(args + ["--json", str(tmp_path / "a.json")]) == 0
    assert "emulated bf16" not in capsys.readouterr().err
    assert main(args + ["--json", str(tmp_path / "b.json"), "--bf16"]) == 0
    assert "warning: emulated bf16: leave out --bf16" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--sampler", "nope"], "unknown sampler 'nope'"),
        (["--set", "k"], "argument --set: expects key=value, got 'k' (one word: --set k=VALUE)"),
        (["--sampler", "topk", "--set", "kk=3"], "has no parameter 'kk'"),
        (["--set", "temperature=0.5"], "temperature is this command's option: --temperature 0.5"),
        (["--sampler", "topk", "--set", "batch_size=9"], "batch_size is this command's option: --batch-size 9"),
        # not flags of bench: the positional domain, the parser's own record, --set itself (said "--domain 1")
        (["--sampler", "topk", "--set", "domain=1"], "has no parameter 'domain'; it takes k, steps"),
        (["--sampler", "topk", "--set", "given=1"], "has no parameter 'given'; it takes k, steps"),
        (["--sampler", "topk", "--set", "sets=1"], "has no parameter 'sets'; it takes k, steps"),
        (["--sampler", "topk", "--set", "bf16=1"], "bf16 is this command's option: --bf16 (a switch)"),  # no value
        (["--sampler", "topk", "--set", "k=abc"], "k='abc' is not a valid int"),
        (["--sampler", "topk", "--set", "k=0"], "k must be >= 1"),
        (["--sampler", "topk", "--set", "k=1", "--set", "steps=4"], "give k or steps, not both"),  # 1 is k's default
        (["--limit", "0"], "argument --limit: 0 is outside the accepted range 1..10000000"),
    ],
)
def test_bench_bad_input_is_one_clear_line(tmp_path, model_path, capsys, extra, message):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    rc = main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_bench_missing_files(tmp_path, model_path, capsys):
    assert main(["bench", "sudoku", "--puzzles", str(tmp_path / "none.txt"), "--model", str(model_path)]) == 2
    assert "puzzle file not found" in capsys.readouterr().err
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(tmp_path / "m.safetensors")]) == 2
    assert "weights file not found" in capsys.readouterr().err


def test_bench_bad_puzzle_line(tmp_path, model_path, capsys):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n" + EASY[:-1] + "z\n")
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path)]) == 2
    assert "line 2: bad character 'z'" in capsys.readouterr().err


def test_unknown_command_and_help(capsys):
    assert main(["frobnicate"]) == 2
    assert "unknown command" in capsys.readouterr().err
    assert main([]) == 0
    assert "bench" in capsys.readouterr().out
    assert main(["train", "chess"]) == 2
    assert "invalid choice: 'chess'" in capsys.readouterr().err
    assert main(["train", "--help"]) == 0
    out = capsys.readouterr().out
    assert "sudoku" in out and "protein" in out and "DOMAIN" in out


def test_sweep_grid_spec_and_errors():
    from mi_core.bench.sweep import parse_grid_spec

    assert parse_grid_spec("sequential") == [("sequential", {})]
    assert parse_grid_spec("mi:gamma=0.1,0.3;lam=1") == [("mi", {"gamma": "0.1", "lam": "1"}),
                                                         ("mi", {"gamma": "0.3", "lam": "1"})]
    with pytest.raises(ValueError, match="unknown sampler 'nope'"):
        parse_grid_spec("nope:k=1")
    with pytest.raises(ValueError, match="expected key=v1,v2"):
        parse_grid_spec("topk:k")
    with pytest.raises(ValueError, match="give k or steps, not both"):
        parse_grid_spec("topk:k=1;steps=4")


@pytest.mark.parametrize("grid", [["topk:k=2,2"], ["eb:gamma=1", "eb:gamma=1.0"], ["mi:gamma=1;lam=1", "mi:lam=1;gamma=1"]])
def test_a_grid_setting_given_twice_is_refused(grid):
    """--grid topk:k=2,2 (or the same point in two --grid) ran the cell twice and wrote two rows alike; --budgets 5,5
    and --set k=2 --set k=3 are refused already."""
    from mi_core.bench.sweep import grid_configs

    with pytest.raises(ValueError, match=r"the grid gives (topk k=2|eb gamma=1|mi lam=1, gamma=1) more than once"):
        grid_configs(grid, None)


def test_frontier_and_merge():
    from mi_core.bench.report import frontier
    from mi_core.bench.sweep import merge_rows

    rows = [{"sampler": "a", "params": {}, "accuracy": 0.5, "mean_passes": 10},
            {"sampler": "b", "params": {}, "accuracy": 0.4, "mean_passes": 12},  # dominated
            {"sampler": "c", "params": {}, "accuracy": 0.7, "mean_passes": 50}]
    assert [r["sampler"] for r in frontier(rows)] == ["a", "c"]
    new = [{"sampler": "b", "params": {}, "accuracy": 0.9, "mean_passes": 5},
           {"sampler": "d", "params": {"k": "2"}, "accuracy": 0.1, "mean_passes": 1}]
    merged = merge_rows(rows, new)
    assert [(r["sampler"], r["accuracy"]) for r in merged] == [("a", 0.5), ("b", 0.9), ("c", 0.7), ("d", 0.1)]
    # a row written before params were typed is the same row as its rerun's
    old_rows = [{"sampler": "mi", "params": {"gamma": "0.6", "relative": "true"}, "accuracy": 0.5, "mean_passes": 9}]
    rerun = [{"sampler": "mi", "params": {"gamma": 0.6, "relative": True}, "accuracy": 0.6, "mean_passes": 9}]
    assert [r["accuracy"] for r in merge_rows(old_rows, rerun)] == [0.6]
    kept = merge_rows([{"sampler": "topk", "params": {"k": "2"}, "accuracy": 0.5, "mean_passes": 40}], rerun)
    assert [r["params"] for r in kept] == [{"k": 2}, {"gamma": 0.6, "relative": True}]  # one type in the file


def test_params_are_recorded_typed_and_shown_as_written():
    from mi_core.bench.report import params_text
    from mi_core.decoding.base import typed_params

    typed = typed_params("mi", {"gamma": "1", "lam": "0.5", "relative": "true"})
    assert typed == {"gamma": 1.0, "lam": 0.5, "relative": True} and type(typed["gamma"]) is float
    assert typed_params("topk", {"k": "4"}) == {"k": 4}
    assert params_text(typed) == "gamma=1, lam=0.5, relative=true"
    with pytest.raises(ValueError, match="not a valid int"):
        typed_params("topk", {"k": "four"})


def test_the_frontier_names_views_and_decodes_again():
    from mi_core.bench.report import frontier_text

    rows = [{"sampler": "mi", "params": {"gamma": "0.6"}, "accuracy": 0.8, "mean_passes": 10},
            {"sampler": "mi", "params": {"gamma": "0.6"}, "accuracy": 0.97, "mean_passes": 38, "attempts": 32},
            {"sampler": "sequential", "params": {}, "accuracy": 0.98, "mean_passes": 90, "views": 4, "attempts": 1}]
    assert frontier_text(rows) == "mi(gamma=0.6), mi(gamma=0.6, up to 32 decodes), sequential(4 views)"


def test_sweep_writes_rows_html_and_section(tmp_path, model_path, capsys):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n" + OTHER + "\n")
    out, md = tmp_path / "s.json", tmp_path / "B.md"
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--markdown", str(md),
            "--model", str(model_path), "--device", "cpu"]
    assert main(base + ["--grid", "topk:k=2,4", "--name", "demo"]) == 0
    assert "demo topk k=4: accuracy" in capsys.readouterr().err  # each cell's line as it finishes
    assert main(base + ["--grid", "sequential", "--name", "demo", "--merge"]) == 0
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["params"]) for r in rows] == [("topk", {"k": 2}), ("topk", {"k": 4}), ("sequential", {})]
    assert all(r["n"] == 2 and 0 <= r["accuracy"] <= 1 for r in rows)
    assert rows[2]["mean_passes"] == (EASY.count(".") + OTHER.count(".")) / 2
    text = md.read_text()
    assert text.count("<!-- sweep-demo:start -->") == 1 and "| sequential |" in text and "--merge" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["B.md", "p.txt", "s.json", "tiny.json",
                                                          "tiny.safetensors"]  # nothing it was not told to write
    assert main(base + ["--grid", "sequential", "--html", str(out.with_suffix(".html"))]) == 2  # drawn by the app now
    from mi_lens_app.sweep_plot import main as plot_main

    capsys.readouterr()
    assert plot_main([str(out), str(out.with_suffix(".html"))]) == 0
    assert capsys.readouterr().out == f"wrote {out.with_suffix('.html')}\n"  # it said nothing of where it wrote
    html = out.with_suffix(".html").read_text()
    assert "frontier" in html and "topk" in html and "plotly" in html.lower()
    assert plot_main([str(md), str(tmp_path / "x.html")]) == 2  # not a sweep's rows: one clear error


def test_bench_json_records_settings_and_repo_relative_paths(tmp_path, model_path):
    from mi_core.io import ROOT, display_path

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    out = tmp_path / "o.json"
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--model", str(model_path),
                 "--sampler", "random", "--set", "k=4", "--temperature", "0.5", "--seed", "7", "--batch-size", "3",
                 "--limit", "1"]) == 0
    res = json.loads(out.read_text())
    assert (res["seed"], res["temperature"], res["batch_size"], res["limit"]) == (7, 0.5, 3, 1)
    assert res["precision"] == "fp32" and res["seeding"] == "per item"
    assert display_path(ROOT / "assets" / "sudoku_mdm.safetensors") == "assets/sudoku_mdm.safetensors"
    assert display_path(puzzles) == str(puzzles)  # outside the repository: kept as given


def test_seeded_results_do_not_depend_on_batch_size(tiny_mdm):
    from mi_core.decoding import make_strategy
    from mi_core.domains.sudoku import PuzzleRecord
    from mi_core.domains.sudoku.bench import evaluate

    records = [PuzzleRecord(p, line=i + 1) for i, p in enumerate([EASY, OTHER] * 5)]
    for name, params, temperature in [("random", {"k": 4}, 0.0), ("random", {"k": 4}, 1.0),
                                      ("top_margin", {"k": 3, "gumbel": 1.0}, 0.0)]:
        runs = [evaluate(tiny_mdm, records, make_strategy(name, **params), batch_size=b, temperature=temperature,
                         seed=11) for b in (7, 256)]
        for key in ("passes", "cell_accuracy", "accuracy"):
            assert runs[0][key] == runs[1][key], (name, key)


def test_sweep_merge_needs_a_list_of_rows_and_writes_only_what_it_is_told(tmp_path, model_path, capsys):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    obj = tmp_path / "obj.json"
    obj.write_text('{"rows": []}\n')
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "sequential", "--model", str(model_path)]
    assert main([*base, "--json", str(obj), "--merge"]) == 2
    assert "must hold a JSON list of sweep rows" in capsys.readouterr().err
    out = tmp_path / "rows.json"
    assert main([*base, "--json", str(out)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["obj.json", "p.txt", "rows.json", "tiny.json",
                                                          "tiny.safetensors"]
    assert main([*base, "--json", str(out)]) == 2 and "already exists" in capsys.readouterr().err
    assert main([*base, "--json", str(out), "--merge"]) == 0 and len(json.loads(out.read_text())) == 1
    # a section goes only into a Markdown file; a bad estimator fails before any cell runs (none is lost)
    assert main([*base, "--json", str(tmp_path / "x.json"), "--markdown", str(obj)]) == 2
    assert "a Markdown report file ends in .md" in capsys.readouterr().err and obj.read_text() == '{"rows": []}\n'
    cut = tmp_path / "est.safetensors"
    cut.write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{}")
    assert main(["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=2", "--grid", "mi:gamma=0.3",
                 "--model", str(model_path), "--estimator", str(cut), "--json", str(tmp_path / "y.json")]) == 2
    err = capsys.readouterr().err
    assert "est.json" in err and "topk {'k': '2'}: accuracy" not in err and not (tmp_path / "y.json").exists()


def stop_sweep_at(monkeypatch, cell: int) -> list[str]:
    """Make the sweep's ``cell``-th cell raise KeyboardInterrupt (a Ctrl-C there; 0: none), and record the sampler
    of each cell begun, in the list returned."""
    from mi_core.bench import sweep

    calls, real = [], sweep.sweep_cell

    def stops(*payload):
        calls.append(payload[5])
        if len(calls) == cell:
            raise KeyboardInterrupt
        return real(*payload)

    monkeypatch.setattr(sweep, "sweep_cell", stops)
    return calls


def test_an_interrupted_sweep_keeps_its_finished_cells_and_resumes(tmp_path, model_path, capsys, monkeypatch):
    """A sweep stopped after hours of cells kept none of them (its JSON is written at the end). Each finished cell
    is kept in ``OUT.partial``; ``--resume`` runs only the rest, and the rows equal an uninterrupted run's."""

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n" + OTHER + "\n")
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=2,4", "--grid", "sequential",
            "--model", str(model_path), "--device", "cpu"]
    assert main([*base, "--json", str(tmp_path / "whole.json")]) == 0
    calls = stop_sweep_at(monkeypatch, 2)
    out = tmp_path / "s.json"
    assert main([*base, "--json", str(out)]) == 130
    assert "s.json.partial keeps the finished cells: add --resume" in capsys.readouterr().err and not out.exists()
    assert main([*base, "--json", str(out)]) == 2 and "add --resume to continue it" in capsys.readouterr().err
    assert main([*base, "--limit", "1", "--json", str(out), "--resume"]) == 2
    assert "other settings (limit None there, 1 now)" in capsys.readouterr().err
    monkeypatch.undo()
    assert main([*base, "--json", str(out), "--resume"]) == 0 and calls == ["topk", "topk"]
    assert "1 of 3 cells already run" in capsys.readouterr().err and not partial_path(out).exists()
    whole, resumed = json.loads((tmp_path / "whole.json").read_text()), json.loads(out.read_text())
    drop = ("seconds", "command")
    assert [{k: v for k, v in r.items() if k not in drop} for r in resumed] == \
           [{k: v for k, v in r.items() if k not in drop} for r in whole]
    assert "--resume" not in resumed[2]["command"]


def test_a_sweep_stopped_before_its_first_cell_promises_no_partial_file(tmp_path, model_path, capsys, monkeypatch):
    """Stopped before any cell finished, a sweep said ``OUT.partial keeps the finished cells: add --resume``, but
    there was no such file and ``--resume`` then failed; ``--resume`` after a finished sweep said ``pass --force``,
    and ``--resume --force`` failed again. A damaged ``.partial`` whose cells were not rows was read as one."""
    from mi_core.bench import sweep

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    out = tmp_path / "s.json"
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=2", "--model", str(model_path),
            "--device", "cpu", "--json", str(out)]

    def stops(*payload):
        raise KeyboardInterrupt

    monkeypatch.setattr(sweep, "sweep_cell", stops)
    assert main(base) == 130
    err = capsys.readouterr().err
    assert "interrupted (Ctrl-C)" in err and "--resume" not in err and not partial_path(out).exists()
    monkeypatch.undo()
    assert main(base) == 0 and main([*base, "--resume"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err == (f"error: --resume: no interrupted sweep {out}.partial to continue ({out} holds a finished "
                   "sweep's results): run the command without --resume")
    row = json.loads(out.read_text())[0]
    settings = {k: row[k] for k in ("set", "puzzles", "limit", "level", "precision", "seed", "batch_size",
                                    "temperature", "model", "model_sha256", "iterations") if k in row}
    partial_path(out).mkdir()  # refused before the work, not after the first cell
    assert main([*base, "--force"]) == 2
    err = capsys.readouterr().err
    assert "is not a file: move it away" in err and "topk k=2: accuracy" not in err
    partial_path(out).rmdir()
    key = sweep.cell_key(("topk", {"k": "2"}, None))
    for cell in ([key, 5], [key, {"sampler": "topk"}]):  # a traceback, a row of no figures
        partial_path(out).write_text(json.dumps({"settings": settings, "cells": [cell]}))
        assert main([*base, "--resume", "--force"]) == 2
        assert "is not a sweep's record of finished cells" in capsys.readouterr().err


def test_a_resume_on_part_of_the_grid_keeps_the_other_finished_cells(tmp_path, model_path, capsys, monkeypatch):
    """``--resume --samplers X`` (finishing one sampler first) removed the ``.partial`` file at its end, and with it
    every finished cell of the other samplers. They are kept there now, said, and a later ``--resume`` uses them."""

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n" + OTHER + "\n")
    out = tmp_path / "s.json"
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=2,4", "--grid", "sequential",
            "--model", str(model_path), "--device", "cpu", "--json", str(out)]
    assert main([*base[:-1], str(tmp_path / "whole.json")]) == 0
    stop_sweep_at(monkeypatch, 3)
    assert main(base) == 130
    monkeypatch.undo()
    assert main([*base, "--resume", "--samplers", "sequential"]) == 0
    err = capsys.readouterr().err
    assert "keeps 2 finished cells outside this grid (topk k=2, topk k=4)" in err and partial_path(out).exists()
    assert [r["sampler"] for r in json.loads(out.read_text())] == ["sequential"]
    assert main([*base, "--resume", "--force"]) == 0 and "2 of 3 cells already run" in capsys.readouterr().err
    drop = ("seconds", "command")
    assert [{k: v for k, v in r.items() if k not in drop} for r in json.loads(out.read_text())] == \
           [{k: v for k, v in r.items() if k not in drop} for r in json.loads((tmp_path / "whole.json").read_text())]
    assert not partial_path(out).exists()


def test_diff_rows_script_flags_changed_figures(tmp_path, capsys):
    """scripts/diff_rows.py (the refactor reproduction check) passes equal figures and flags a changed one."""
    import importlib.util

    from mi_core.io import ROOT

    spec = importlib.util.spec_from_file_location("diff_rows", ROOT / "scripts" / "diff_rows.py")
    diff_rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diff_rows)
    row = {"set": "s", "sampler": "topk", "params": {"k": "4"}, "accuracy": 0.5, "seconds": 1.0}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps([row]))
    new.write_text(json.dumps([row | {"seconds": 2.0, "extra": 1}]))
    assert diff_rows.main([str(old), str(new)]) == 0 and "new fields ['extra']" in capsys.readouterr().out
    new.write_text(json.dumps([row | {"accuracy": 0.6}]))
    assert diff_rows.main([str(old), str(new)]) == 1 and "accuracy" in capsys.readouterr().out
    # a row written before params were typed is its typed rerun's row, and a number for a float is that float
    new.write_text(json.dumps([row | {"params": {"k": 4}}]))
    assert diff_rows.main([str(old), str(new)]) == 0
    old.write_text(json.dumps([row | {"sampler": "mi", "params": {"gamma": "1", "relative": "true"}}]))
    new.write_text(json.dumps([row | {"sampler": "mi", "params": {"gamma": 1, "relative": True}}]))
    assert diff_rows.main([str(old), str(new)]) == 0
    new.write_text(json.dumps([row | {"sampler": "mi", "params": {"gamma": 2, "relative": True}}]))
    assert diff_rows.main([str(old), str(new)]) == 1  # another gamma: each side's row is missing on the other
    # a field a rerun adds inside a nested result (by_level's mean_extra_passes) is new, not a changed figure
    levels = row | {"by_level": {"Hard": {"n": 2, "accuracy": 0.5}}}
    old.write_text(json.dumps([levels]))
    new.write_text(json.dumps([levels | {"by_level": {"Hard": {"n": 2, "accuracy": 0.5, "mean_extra_passes": 9.0}}}]))
    assert diff_rows.main([str(old), str(new)]) == 0
    assert "new fields ['by_level.Hard.mean_extra_passes']" in capsys.readouterr().out
    new.write_text(json.dumps([levels | {"by_level": {"Hard": {"n": 2, "accuracy": 0.6, "mean_extra_passes": 9.0}}}]))
    assert diff_rows.main([str(old), str(new)]) == 1 and "by_level.Hard.accuracy" in capsys.readouterr().out
    new.write_text(json.dumps([levels | {"by_level": {"Hard": {"n": 2}}}]))  # a figure gone is a difference
    assert diff_rows.main([str(old), str(new)]) == 1 and "by_level.Hard.accuracy" in capsys.readouterr().out


def test_diff_rows_script_keeps_rows_of_other_run_settings_apart(tmp_path, capsys):
    """A file's rows of one sampler and params run with other settings (a sweep's --attempts rows, bench-order's
    T and seeds) are other rows: a rerun of one is compared with that one (they collided: the sweep of the soup's
    Expert puzzles read 29 of its 33 rows, and a one-decode rerun 'differed' from the 32-decode row)."""
    import importlib.util

    from mi_core.io import ROOT

    spec = importlib.util.spec_from_file_location("diff_rows", ROOT / "scripts" / "diff_rows.py")
    diff_rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diff_rows)
    once = {"set": "s", "sampler": "topk", "params": {"k": 7}, "accuracy": 0.665, "mean_passes": 8.7}
    retried = once | {"accuracy": 0.955, "mean_passes": 32.6, "attempts": 32}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps([once, retried]))
    new.write_text(json.dumps([once]))
    assert diff_rows.main([str(old), str(new)]) == 1  # the 32-decode row is missing, and nothing differs
    out = capsys.readouterr()
    assert "differs" not in out.out and "attempts=32'): only in old" in out.out and "2 old rows, 1 new" in out.err
    seeds = [{"sampler": "random", "params": {"steps": 5}, "T": t, "seed": s, "jsd": t + s} for t in (5, 10) for s in (0, 1)]
    old.write_text(json.dumps(seeds))
    new.write_text(json.dumps(seeds[::-1]))
    assert diff_rows.main([str(old), str(new)]) == 0 and "4 old rows, 4 new" in capsys.readouterr().err
    old.write_text(json.dumps([once, once | {"accuracy": 0.5}]))  # two rows no setting tells apart
    with pytest.raises(SystemExit, match="error: .*old.json holds two rows of .*'topk'"):
        diff_rows.main([str(old), str(new)])


def test_diff_rows_script_reads_a_bench_file_as_one_row(tmp_path, capsys):
    """A ``bench`` run's file is one row, not a list: diff_rows compares it (it stopped with a KeyError traceback on
    every ``bench --json`` file, sudoku_chain_kaggle500_soup3.json among them), and a file of no rows is one error
    line."""
    import importlib.util

    from mi_core.io import ROOT

    spec = importlib.util.spec_from_file_location("diff_rows", ROOT / "scripts" / "diff_rows.py")
    diff_rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diff_rows)
    run = {"sampler": "mi", "params": {"gamma": 0.6}, "accuracy": 0.99, "passes": [3, 5], "attempts": 32}
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(run))
    new.write_text(json.dumps(run | {"seconds": 2.0}))
    assert diff_rows.main([str(old), str(new)]) == 0 and "1 old rows, 1 new" in capsys.readouterr().err
    new.write_text(json.dumps(run | {"passes": [3, 6]}))
    assert diff_rows.main([str(old), str(new)]) == 1 and "'passes': ([3, 5], [3, 6])" in capsys.readouterr().out
    new.write_text(json.dumps({"spearman": 0.938}))  # an eval-estimator file holds no rows
    with pytest.raises(SystemExit, match="error: .*new.json holds no list of rows with a sampler each"):
        diff_rows.main([str(old), str(new)])


def test_diff_rows_script_checks_a_partial_rerun_and_a_run_kept_with_notes(tmp_path, capsys):
    """``--rerun-only`` compares only the committed rows a rerun holds (7 samplers of a 33-row sweep rerun gave 26
    'only in old' lines and exit 1 with no figure changed), and a bench run kept as ``{"about", "run", "command"}``
    (sudoku_learned15_kaggle200_soup3.json) is read as its run (it was refused as holding no rows)."""
    import importlib.util

    from mi_core.io import ROOT

    spec = importlib.util.spec_from_file_location("diff_rows", ROOT / "scripts" / "diff_rows.py")
    diff_rows = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(diff_rows)
    rows = [{"set": "s", "sampler": "topk", "params": {"k": k}, "accuracy": k / 10} for k in (2, 4, 7)]
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    old.write_text(json.dumps(rows))
    new.write_text(json.dumps(rows[2:]))
    assert diff_rows.main([str(old), str(new)]) == 1  # without the flag the rows not rerun are missing
    capsys.readouterr()
    assert diff_rows.main([str(old), str(new), "--rerun-only"]) == 0
    err = capsys.readouterr().err
    assert "2 old rows not rerun, left out" in err and "1 old rows, 1 new rows, 0 differ" in err
    new.write_text(json.dumps([rows[2] | {"accuracy": 0.6}]))
    assert diff_rows.main([str(old), str(new), "--rerun-only"]) == 1 and "accuracy" in capsys.readouterr().out
    new.write_text(json.dumps([rows[2] | {"params": {"k": 9}}]))  # a rerun row the old file lacks still counts
    assert diff_rows.main([str(old), str(new), "--rerun-only"]) == 1 and "only in new" in capsys.readouterr().out
    run = {"sampler": "learned", "params": {"steps": 15}, "accuracy": 0.835, "passes": [3, 4]}
    old.write_text(json.dumps({"about": "notes", "run": run, "command": "python -m mi_core bench ..."}))
    new.write_text(json.dumps(run | {"seconds": 48.2}))
    assert diff_rows.main([str(old), str(new)]) == 0 and "1 old rows, 1 new" in capsys.readouterr().err
    new.write_text(json.dumps(run | {"passes": [3, 5]}))
    assert diff_rows.main([str(old), str(new)]) == 1 and "passes" in capsys.readouterr().out


def test_display_path_keeps_machine_paths_out_of_records(tmp_path):
    from mi_core.io import ROOT, display_path

    assert display_path(ROOT / "assets" / "x.json") == "assets/x.json"
    installed = "/opt/py/lib/python3.11/site-packages/antiberty/trained_models/m.bin"
    assert display_path(installed) == "antiberty/trained_models/m.bin"
    assert display_path(tmp_path / "elsewhere") == str(tmp_path / "elsewhere")


def test_bench_probe_records_the_model_file_it_loaded(tmp_path):
    out = tmp_path / "bench_probe.json"
    assert main(["bench-probe", "--batch-sizes", "2", "--masked", "2", "--states", "1", "--min-seconds", "0.01",
                 "--eps", "0.05", "--device", "cpu", "--threads", "1", "--json", str(out)]) == 0
    assert json.loads(out.read_text())["model"] == "assets/sudoku_peer_recurrent.safetensors"  # the default's file


def test_probe_of_one_blank_names_no_pair(capsys):
    # one masked cell has no pair, so no strongest pair may be named (argmax would give the cell twice)
    assert main(["probe", "oracle4", "--puzzle", "1234341221434.21", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "probed 1 masked cell:" in out and "no pair to measure: MI needs two masked cells, and this state has 1" \
        in out  # Domain.nouns; it said "every MI is 0: no two masked cells depend on each other"
    assert "between" not in out


def test_every_option_of_every_command_says_what_it_does():
    import argparse

    from mi_core import cli
    from mi_core.domain import domain_commands

    bare = []
    for name in [*cli.COMMANDS, *domain_commands()]:
        parser = cli.command_parser(name, cli.load(name))
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for domain, sub in (subs[0].choices.items() if subs else [("-", parser)]):
            for action in sub._actions:
                said = (action.help or "").split("(default")[0].strip()
                if action.option_strings[0] != "-h" and len(said) < 3:
                    bare.append(f"{name} {domain} {action.option_strings[0]}")
    assert not bare, bare
    parser = cli.command_parser("sweep", cli.load("sweep"))
    sudoku = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["sudoku"]
    helps = {a.dest: a.help for a in sudoku._actions}
    assert helps["json"].endswith("(required)") and helps["model"].count("(default") == 1


def test_a_misplaced_option_points_at_the_domains_help_and_a_missing_domain_is_named(capsys):
    assert main(["probe", "sudoku", "--puzzle", EASY, "--sampler", "mi"]) == 2
    assert capsys.readouterr().err.strip() == ("error: unrecognized arguments: --sampler mi "
                                               "(see python -m mi_core probe sudoku --help)")
    assert main(["probe", "--puzzle", EASY]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: name the domain before the options: python -m mi_core probe DOMAIN --puzzle ...")
    assert "sudoku" in err and "protein" in err


def test_an_output_may_not_name_the_file_the_command_reads(tmp_path, model_path, capsys):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--json", str(puzzles),
                 "--force"]) == 2
    assert f"--json {puzzles} is the --puzzles file this command reads" in capsys.readouterr().err
    assert puzzles.read_text() == EASY + "\n"


def test_help_has_no_markup_and_views_only_where_a_domain_has_symmetries(capsys):
    for argv in (["make-estimator-data", "sudoku"], ["probe", "protein"], ["bench-order", "sudoku"]):
        assert main([*argv, "--help"]) == 0
        out = capsys.readouterr().out
        assert "``" not in out and ":func:" not in out and ":class:" not in out, argv
    assert main(["bench", "sudoku", "--help"]) == 0 and "--views" in capsys.readouterr().out
    assert main(["bench", "antibody", "--help"]) == 0 and "--views" not in capsys.readouterr().out


def test_a_model_file_from_the_environment_names_its_variable(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", str(tmp_path / "nope.safetensors"))
    assert main(["probe", "sudoku", "--puzzle", EASY]) == 2
    assert "(the file $MI_LENS_SUDOKU_MODEL names)" in capsys.readouterr().err


def test_levels_a_file_lacks_or_misspells_are_named(tmp_path, capsys):
    plain, graded = tmp_path / "p.txt", tmp_path / "g.csv"
    plain.write_text(EASY + "\n")
    graded.write_text(f"puzzle,solution,level\n{EASY},{EASY_SOL},Easy\n{EASY},{EASY_SOL},Hard\n")
    base = ["sweep", "sudoku", "--grid", "sequential", "--json", str(tmp_path / "o.json")]
    assert main([*base, "--puzzles", str(plain), "--level", "Hard"]) == 2
    assert f"--level Hard: {plain} has no levels" in capsys.readouterr().err
    assert main([*base, "--puzzles", str(graded), "--level", "Medium"]) == 2
    assert "no puzzles of level 'Medium'" in (err := capsys.readouterr().err) and "its levels: Easy, Hard" in err
    graded.write_text(f"puzzle,solution,level\n{EASY},{EASY_SOL},Easy\n{EASY},{EASY_SOL[:40]},Hard\n")
    assert main([*base, "--puzzles", str(graded)]) == 2
    assert "line 3: solution: a Sudoku has 81 cells, got 40 characters" in capsys.readouterr().err


def test_diagnose_markdown_without_a_section_writes_a_named_one(tmp_path, model_path, capsys):
    puzzles, md = tmp_path / "p.txt", tmp_path / "d.md"
    puzzles.write_text(EASY + "\n" + EASY + "\n")
    assert main(["diagnose", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--sampler", "topk:k=3",
                 "--json", str(tmp_path / "d.json"), "--markdown", str(md), "--threads", "1"]) == 0
    assert "diagnose p" in md.read_text()
    err = capsys.readouterr().err  # a bar for the reference and one for each sampler, filled to the puzzles given
    assert "sequential: 100%" in err and "topk:k=3: 100%" in err and "2.0/2 " in err


def test_a_report_section_is_rewritten_only_between_sound_markers(tmp_path):
    from mi_core.bench.report import update_section

    md = tmp_path / "r.md"
    md.write_text("intro\n<!-- a:start -->\nold\n<!-- a:end -->\nmine\n")
    update_section("a", "new", md)
    assert md.read_text() == "intro\n<!-- a:start -->\nnew\n<!-- a:end -->\nmine\n"
    for text in ("intro\n<!-- a:start -->\nold\nmine\n", "<!-- a:end -->\nmine\n<!-- a:start -->\n",
                 "<!-- a:start -->\n<!-- a:end -->\n<!-- a:start -->\n<!-- a:end -->\n"):
        md.write_text(text)
        with pytest.raises(ValueError, match="its section 'a' has "):
            update_section("a", "new", md)
        assert md.read_text() == text  # nothing cut
    with pytest.raises(ValueError, match="a section name holds no"):
        update_section("x -->", "new", tmp_path / "s.md")


def test_a_sweep_section_name_that_cannot_be_a_marker_is_refused_before_the_work(tmp_path, model_path, capsys):
    """`--name "a -->"` ran the sweep, wrote its JSON, then refused the report's section name."""
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    out = tmp_path / "s.json"
    rc = main(["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "sequential", "--model", str(model_path),
               "--json", str(out), "--markdown", str(tmp_path / "r.md"), "--name", "a -->", "--threads", "1"])
    assert rc == 2 and not out.exists()
    assert "--name 'a -->': a section name holds no '--'" in capsys.readouterr().err


def test_a_sweep_sampler_not_in_the_grid_is_named(tmp_path, model_path, capsys):
    """`--samplers sequentail` said only "the grid is empty after --samplers filtering", after the model loaded."""
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    rc = main(["sweep", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--samplers", "sequentail",
               "--json", str(tmp_path / "s.json")])
    assert rc == 2
    assert "--samplers sequentail: not in the grid, whose samplers are eb, mask_predict" in capsys.readouterr().err


def test_a_sweep_estimator_trained_on_other_weights_is_refused_before_the_work(tmp_path, model_path, capsys,
                                                                               monkeypatch):
    """`sweep --estimator E --model B`, E trained on a model A of B's width, ran the cells before its first mi
    cell, then stopped with "use an estimator trained on this model (estimator=PATH, or leave it unset for the
    shipped one)": a syntax sweep does not take, and no shipped estimator serves B. Now refused first."""
    from mi_core.bench import sweep
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator

    puzzles, est = tmp_path / "p.txt", tmp_path / "est.safetensors"
    puzzles.write_text(EASY + "\n")
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est,
                   {"mdm": "a.safetensors", "mdm_sha256": "0" * 64})
    monkeypatch.setattr(sweep, "run_cells", lambda *a, **k: pytest.fail("a cell ran"))
    rc = main(["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=2", "--grid", "mi:gamma=0.5",
               "--model", str(model_path), "--estimator", str(est), "--json", str(tmp_path / "s.json"),
               "--threads", "1"])
    err = capsys.readouterr().err
    assert rc == 2 and not (tmp_path / "s.json").exists()
    assert f"the estimator {est} was trained on a.safetensors, not on {model_path}: give --estimator trained" in err


def test_estimate_on_a_model_no_shipped_estimator_was_trained_on_names_its_option(model_path, capsys):
    """`estimate sudoku --model MINE` said "give estimator=PATH", bench's --set syntax, which estimate refuses."""
    assert main(["estimate", "sudoku", "--puzzle", EASY, "--model", str(model_path), "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert f"error: no shipped MI estimator was trained on {model_path}: give --estimator FILE" in err
    assert "estimator=PATH" not in err


def test_an_estimator_of_another_width_points_at_the_model_it_was_trained_on(tmp_path, model_path, capsys):
    """`estimate` / `eval-estimator sudoku --estimator MINE` without --model read the shipped model and said only
    "use an estimator trained on this model", though the estimator's JSON names the model it was trained on."""
    from mi_core.io import file_sha256
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator

    est, puzzles = tmp_path / "est.safetensors", tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est,
                   {"mdm": str(model_path), "mdm_sha256": file_sha256(model_path)})
    hint = f"or give --model {model_path} (the model it was trained on)"
    evals = ["eval-estimator", "sudoku", "--puzzles", str(puzzles), "--states", "1", "--threads", "1"]
    for argv in (["estimate", "sudoku", "--puzzle", EASY, "--threads", "1"], evals):
        assert main([*argv, "--estimator", str(est)]) == 2
        assert hint in capsys.readouterr().err
    assert main([*evals, "--model", str(model_path)]) == 2  # the shipped estimator, not named: name the option
    err = capsys.readouterr().err
    assert "use an estimator trained on this model (--estimator FILE;" in err and "--model" not in err.split(":")[-1]


def test_bench_offers_the_shipped_estimator_only_when_one_serves_the_model(tmp_path, model_path, capsys):
    """`bench --model MINE --set estimator=E` (E trained on other weights) said "or leave it unset for the shipped
    one"; unset, bench then said no estimator serves MINE. Now it says so only where one does."""
    from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator

    puzzles, est = tmp_path / "p.txt", tmp_path / "est.safetensors"
    puzzles.write_text(EASY + "\n")
    save_estimator(MIEstimator(EstimatorConfig(d_in=32, n_values=9, n_positions=81)), est,
                   {"mdm": "a.safetensors", "mdm_sha256": "0" * 64})
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--sampler", "mi",
                 "--set", f"estimator={est}", "--threads", "1"]) == 2
    err = capsys.readouterr().err
    assert "(estimator=PATH; python -m mi_core train-estimator makes one)" in err and "leave it unset" not in err


def test_diagnose_checks_each_samplers_estimator_before_decoding(tmp_path, model_path, capsys, monkeypatch):
    """`diagnose --model MINE --sampler eb:... --sampler mi:...` decoded the sequential reference and eb, then stopped
    at mi: no shipped estimator serves MINE. Now that is said first, naming the --sampler."""
    from mi_core.domains.sudoku import diagnose

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    monkeypatch.setattr(diagnose, "trace", lambda *a, **k: pytest.fail("a sampler decoded"))
    assert main(["diagnose", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--sampler",
                 "eb:gamma=0.5", "--sampler", "mi:gamma=1;lam=1", "--json", str(tmp_path / "d.json"),
                 "--threads", "1"]) == 2
    assert f"--sampler mi:gamma=1;lam=1: no shipped MI estimator was trained on {model_path}" in capsys.readouterr().err


def test_a_resumed_sweep_runs_again_the_cells_of_an_estimator_trained_again(tmp_path, capsys, monkeypatch):
    """--resume kept the finished cells of an estimator file by its name alone: one trained again under that name
    gave rows of the old file (and its sha256) beside rows of the new one. Its cells now run again."""
    from safetensors import safe_open
    from safetensors.torch import load_file, save_file

    from mi_core.io import ROOT, file_sha256

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n" + OTHER + "\n")
    est = tmp_path / "est.safetensors"
    for suffix in (".safetensors", ".json"):
        est.with_suffix(suffix).write_bytes((ROOT / "assets" / f"sudoku_mi_estimator_recurrent{suffix}").read_bytes())
    out = tmp_path / "s.json"
    argv = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "mi:gamma=0.6;lam=1", "--grid", "topk:k=40",
            "--estimator", str(est), "--json", str(out), "--device", "cpu", "--threads", "1"]
    calls = stop_sweep_at(monkeypatch, 2)
    assert main(argv) == 130 and calls == ["mi", "topk"]
    with safe_open(est, "pt") as fh:
        metadata = fh.metadata()
    tensors = load_file(est)  # trained again: other weights under the same name
    save_file({k: v + 1e-3 if v.is_floating_point() else v for k, v in tensors.items()}, est, metadata=metadata)
    monkeypatch.undo()
    calls = stop_sweep_at(monkeypatch, 0)  # none stops: the cells run are recorded
    assert main([*argv, "--resume"]) == 0 and calls == ["mi", "topk"], capsys.readouterr().err[-800:]
    rows = json.loads(out.read_text())
    assert rows[0]["estimator_sha256"] == file_sha256(est)
    # the old estimator's cell was kept in the .partial file "outside this grid ... a grid that holds them uses them",
    # though this grid holds it and no grid would use it
    assert "outside this grid" not in capsys.readouterr().err and not (tmp_path / "s.json.partial").exists()


def test_sweep_merge_of_another_models_run_into_the_same_set_is_refused(tmp_path, model_path, capsys):
    """--merge of a run on another model (of the same iterations) into a set of the file replaced the first model's
    rows at the same settings, silently, and left the set a mix of the two models."""
    puzzles, out = tmp_path / "p.txt", tmp_path / "rows.json"
    puzzles.write_text(EASY + "\n")
    other = tmp_path / "other.safetensors"
    for ext in (".safetensors", ".json"):
        other.with_suffix(ext).write_bytes(model_path.with_suffix(ext).read_bytes())
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=8", "--json", str(out)]
    assert main([*base, "--model", str(model_path)]) == 0
    before = out.read_text()
    assert main([*base, "--model", str(other), "--merge"]) == 2 and out.read_text() == before
    assert f"error: --merge: {out} holds rows of set 'p' run on {model_path}" in capsys.readouterr().err
    assert main([*base, "--model", str(other), "--merge", "--name", "p_other"]) == 0
    assert [r["set"] for r in json.loads(out.read_text())] == ["p", "p_other"]
    assert main([*base, "--model", str(model_path), "--merge"]) == 0  # a rerun on the same model replaces its row
    assert len(json.loads(out.read_text())) == 2


def test_sweep_merge_of_rows_that_name_no_domain_is_refused_naming_the_row(tmp_path, model_path, capsys, monkeypatch):
    """Rows that record neither a domain nor a command (written before sweeps recorded their command) passed the
    --merge domain check unchecked, whatever domain they were run on. Now refused before the model loads, naming the
    file, the row and the fix; with their "domain" written, they merge."""
    from mi_core.bench import decode

    puzzles, out = tmp_path / "p.txt", tmp_path / "rows.json"
    puzzles.write_text(EASY + "\n")
    old = [{"set": "old", "sampler": "topk", "params": {"k": "2"}, "n": 1, "accuracy": 1.0, "mean_passes": 30.0},
           {"set": "old", "sampler": "sequential", "params": {}, "n": 1, "accuracy": 1.0, "mean_passes": 50.0}]
    out.write_text(json.dumps(old))
    argv = ["sweep", "sudoku", "--puzzles", str(puzzles), "--grid", "topk:k=8", "--model", str(model_path),
            "--json", str(out), "--merge", "--threads", "1"]
    real_load = decode.load
    monkeypatch.setattr(decode, "load", lambda *a, **k: pytest.fail("the model loaded"))
    assert main(argv) == 2 and json.loads(out.read_text()) == old
    assert capsys.readouterr().err == (f"error: --merge: {out} row 1 (set 'old', sampler 'topk') and 1 more records "
                                       "neither its domain nor the sweep command that wrote it: where they were run on "
                                       'sudoku, add "domain": "sudoku" to them; else write this sweep to another --json\n')
    monkeypatch.setattr(decode, "load", real_load)
    out.write_text(json.dumps([{**r, "domain": "sudoku"} for r in old]))
    assert main(argv) == 0, capsys.readouterr().err
    assert [(r["set"], r["params"]) for r in json.loads(out.read_text())] == [("old", {"k": 2}), ("old", {}),
                                                                            ("p", {"k": 8})]


@pytest.mark.parametrize("again", ["eb:gamma=1.0", "eb: gamma=1"])
def test_diagnose_refuses_one_sampler_written_twice_two_ways(tmp_path, model_path, capsys, monkeypatch, again):
    """--sampler eb:gamma=1 --sampler eb:gamma=1.0 ran the same setting twice (two rows alike under two names): the
    check compared the texts, where sweep's grid compares the settings."""
    from mi_core.domains.sudoku import diagnose

    puzzles = tmp_path / "p.txt"
    puzzles.write_text(EASY + "\n")
    monkeypatch.setattr(diagnose, "trace", lambda *a, **k: pytest.fail("a sampler decoded"))
    assert main(["diagnose", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--sampler",
                 "eb:gamma=1", "--sampler", again, "--json", str(tmp_path / "d.json"), "--threads", "1"]) == 2
    assert f"error: --sampler {again} is given twice (as eb:gamma=1): it would run twice" in capsys.readouterr().err


def test_sweep_merge_of_the_same_model_spelled_another_way_is_not_refused(tmp_path, model_path, capsys, monkeypatch):
    """A model outside the repository is recorded as given: a --merge naming it by its absolute path after a run that
    named it relatively was refused as "run on tiny.safetensors, not /.../tiny.safetensors", the same file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.txt").write_text(EASY + "\n")
    base = ["sweep", "sudoku", "--puzzles", "p.txt", "--json", "rows.json", "--threads", "1"]
    assert main([*base, "--grid", "topk:k=8", "--model", model_path.name]) == 0
    assert main([*base, "--grid", "topk:k=4", "--model", str(model_path), "--merge"]) == 0, capsys.readouterr().err
    assert [r["params"] for r in json.loads((tmp_path / "rows.json").read_text())] == [{"k": 8}, {"k": 4}]


def stop_decoding_after(monkeypatch, decodes: int) -> None:
    """Make the ``decodes + 1``-th batch decoded after the warm-up raise KeyboardInterrupt (a Ctrl-C there)."""
    from mi_core.bench import decode

    calls, real = [], decode.decode_final

    def stops(*args, **kwargs):
        calls.append(1)
        if len(calls) == decodes + 2:  # the first call is the untimed warm-up
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(decode, "decode_final", stops)


def test_a_stopped_bench_keeps_the_puzzles_it_finished(tmp_path, model_path, capsys, monkeypatch):
    """A bench stopped after minutes of decoding kept nothing: its JSON is written at the end. The puzzles finished
    are written to --json, marked partial, the figures over them alone; the stop line says so; exit 130."""
    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution,level\n" + f"{EASY},{EASY_SOL},Easy\n{OTHER},,Hard\n" * 2)
    out = tmp_path / "out.json"
    base = ["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--device", "cpu",
            "--threads", "1", "--batch-size", "1", "--json", str(out)]
    assert main(base) == 0
    whole = json.loads(out.read_text())
    stop_decoding_after(monkeypatch, 2)
    assert main([*base, "--force"]) == 130
    err = capsys.readouterr().err
    assert "stopping: taking the figures of the 2 of 4 puzzles finished (Ctrl-C again keeps nothing)" in err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        f"interrupted (Ctrl-C): the files already written are whole; kept the 2 of 4 puzzles finished, marked partial "
        f"(\"stopped\"), in {out} (replacing the file there); {partial_path(out)} keeps the finished inputs: add "
        "--resume to the same command to continue")
    kept = json.loads(out.read_text())
    assert kept["partial"] is True and kept["stopped"] == {"done": 2, "of": 4, "unit": "puzzle"}
    assert kept["n"] == 2 and kept["inputs_done"] == [0, 1] and kept["sequences"] == whole["sequences"][:2]
    assert kept["passes"] == whole["passes"][:2] and kept["mean_passes"] == sum(whole["passes"][:2]) / 2
    assert {level: group["n"] for level, group in kept["by_level"].items()} == {"Easy": 1, "Hard": 1}
    monkeypatch.undo()
    stop_decoding_after(monkeypatch, 0)
    assert main([*base[:-2], "--json", str(tmp_path / "none.json")]) == 130
    assert capsys.readouterr().err.strip().endswith("no puzzle was finished: nothing kept")
    assert not (tmp_path / "none.json").exists()
    monkeypatch.undo()
    stop_decoding_after(monkeypatch, 1)
    assert main(base[:-2]) == 130 and not (tmp_path / "none.json").exists()
    assert capsys.readouterr().err.strip().endswith(
        "1 of 4 puzzles finished; nothing kept (no output file was given: --json FILE keeps them)")


def test_a_stopped_bench_resumes_and_equals_a_whole_run(tmp_path, model_path, capsys, monkeypatch):
    """A stopped bench could not go on: its finished inputs were in --json, marked partial, and a rerun decoded them
    all again. They are kept in OUT.json.partial too; --resume decodes only the rest, and its result is the
    uninterrupted run's. The refusals are sweep's."""
    from mi_core.bench import decode

    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution,level\n" + f"{EASY},{EASY_SOL},Easy\n{OTHER},,Hard\n" * 2)
    out, whole = tmp_path / "out.json", tmp_path / "whole.json"
    base = ["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--device", "cpu",
            "--threads", "1", "--batch-size", "1", "--sampler", "topk", "--set", "k=3", "--json", str(out)]
    assert main([*base[:-1], str(whole)]) == 0
    stop_decoding_after(monkeypatch, 2)
    assert main(base) == 130
    assert capsys.readouterr().err.strip().endswith(
        f"in {out}; {partial_path(out)} keeps the finished inputs: add --resume to the same command to continue")
    monkeypatch.undo()
    assert main(base) == 2 and "holds the finished inputs of an interrupted bench: add --resume" in capsys.readouterr().err
    assert main([*base, "--resume", "--seed", "3"]) == 2
    assert "was a run of other settings (--seed 0 there, 3 now)" in capsys.readouterr().err
    calls, real = [], decode.decode_final
    monkeypatch.setattr(decode, "decode_final", lambda *a, **k: calls.append(1) or real(*a, **k))
    assert main([*base, "--resume"]) == 0 and len(calls) == 1 + 2  # the warm-up, then the 2 puzzles left
    drop = ("seconds",)
    assert {k: v for k, v in json.loads(out.read_text()).items() if k not in drop} == \
           {k: v for k, v in json.loads(whole.read_text()).items() if k not in drop}
    assert not partial_path(out).exists() and main([*base, "--resume"]) == 2
    assert "--resume: no interrupted bench" in capsys.readouterr().err
    assert main([*base[:-2], "--resume"]) == 2 and "--resume needs --json" in capsys.readouterr().err


def test_a_bench_stopped_while_decoding_again_resumes_its_rounds(tmp_path, model_path, capsys, monkeypatch):
    """With --attempts, a resumed run goes on from the round of decoding again it was stopped in: its decodes, seeds
    and passes are the uninterrupted run's."""
    puzzles = tmp_path / "p.csv"
    puzzles.write_text("puzzle,solution,level\n" + f"{EASY_SOL},{EASY_SOL},Easy\n{OTHER},,Hard\n" * 2)
    out, whole = tmp_path / "out.json", tmp_path / "whole.json"
    base = ["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--device", "cpu",
            "--threads", "1", "--batch-size", "1", "--attempts", "3", "--json", str(out)]
    assert main([*base[:-1], str(whole)]) == 0
    full = json.loads(whole.read_text())
    assert any(len(d) == 3 for d in full["decode_passes"]), "the test needs a puzzle decoded a third time"
    for decodes in (0, 2, 3):  # the solved puzzles decode nothing: stopped in the first decodes, the first round of
        # decoding again (its second batch), the second round (its first)
        stop_decoding_after(monkeypatch, decodes)
        assert main([*base, "--force"]) == 130
        monkeypatch.undo()
        assert main([*base, "--resume"]) == 0, capsys.readouterr().err
        assert {k: v for k, v in json.loads(out.read_text()).items() if k != "seconds"} == \
               {k: v for k, v in full.items() if k != "seconds"}, decodes


def test_a_resumed_bench_seeded_per_batch_draws_the_seeds_of_the_batches_it_skips(tmp_path, monkeypatch):
    """Protein inputs are seeded once per batch, from one stream: a resumed run draws the seed of each batch it
    kept, so the batches left sample as they would have (seeded from the stream's start, they sampled as the first)."""
    import numpy as np
    import torch

    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm

    torch.manual_seed(0)
    model = tmp_path / "p.safetensors"
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval(), model)
    rng = np.random.default_rng(0)
    fasta = tmp_path / "ref.fa"
    fasta.write_text("".join(f">d{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 30))}\n" for i in range(60)))
    out, whole = tmp_path / "out.json", tmp_path / "whole.json"
    base = ["bench", "protein", "--reference", str(fasta), "--model", str(model), "--samples", "6", "--lengths", "8",
            "--batch-size", "2", "--sampler", "topk", "--set", "k=2", "--device", "cpu", "--threads", "1", "--json"]
    assert main([*base, str(whole)]) == 0
    stop_decoding_after(monkeypatch, 1)
    assert main([*base, str(out)]) == 130
    monkeypatch.undo()
    assert main([*base, str(out), "--resume"]) == 0
    resumed, full = json.loads(out.read_text()), json.loads(whole.read_text())
    assert len(set(full["sequences"])) == 6 and resumed.pop("seconds") and full.pop("seconds") and resumed == full


def test_a_stopped_bench_probe_keeps_the_states_it_probed(tmp_path, capsys, monkeypatch):
    """bench-probe stopped in its probes kept nothing. The states finished are summarised (the group cut short
    without its all-at-once probe) in --json and --markdown's section, marked partial; exit 130."""
    from mi_core.domains.sudoku import bench_probe

    calls, real = [], bench_probe.bench_state

    def stops(*args, **kwargs):  # 2 states of 2 masked cells, 1 of 3, then a stop
        calls.append(1)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_probe, "bench_state", stops)
    out, md = tmp_path / "probe.json", tmp_path / "BENCH.md"
    assert main(["bench-probe", "--batch-sizes", "2", "--masked", "2,3", "--states", "2", "--min-seconds", "0.01",
                 "--eps", "0.05", "--device", "cpu", "--threads", "1", "--json", str(out), "--markdown", str(md)]) == 130
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == (
        "interrupted (Ctrl-C): the files already written are whole; kept the 3 of 4 states finished, marked partial "
        f"(\"stopped\"), in {out} and the section bench-probe of {md}; {out}.partial keeps the finished states: add "
        "--resume to the same command to continue")
    res = json.loads(out.read_text())
    assert res["partial"] is True and res["stopped"] == {"done": 3, "of": 4, "unit": "state"}
    assert [(g["masked"], g["states"], "many" in g) for g in res["probe"]] == [(2, 2, True), (3, 1, False)]
    assert "peak_bf16" not in res and "**Partial: stopped after 3 of 4 states**" in md.read_text()


@pytest.mark.parametrize("stop_in", ["probe_many", "throughput_sweep"])
def test_a_bench_probe_stopped_after_its_last_state_says_what_it_left_undone(tmp_path, capsys, monkeypatch, stop_in):
    """bench-probe stopped in its last all-at-once probe or its bf16 peak (after every state) was reported as
    stopped after "4 of 4 states", all done, with no word of what it had not run."""
    from mi_core.domains.sudoku import bench_probe

    real = getattr(bench_probe, stop_in)

    def stops(*args, **kwargs):  # the second group's all-at-once probe, or the bf16 peak
        if kwargs.get("autocast") or (stop_in == "probe_many" and args[1].eq(0).sum() == 2 * 3):
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(bench_probe, stop_in, stops)
    out, md = tmp_path / "probe.json", tmp_path / "BENCH.md"
    assert main(["bench-probe", "--batch-sizes", "2", "--masked", "2,3", "--states", "2", "--min-seconds", "0.01",
                 "--eps", "0.05", "--device", "cpu", "--threads", "1", "--json", str(out), "--markdown", str(md)]) == 130
    left = ("the all-at-once probe of the 3-masked states and " if stop_in == "probe_many" else "") + \
        "the bf16 peak forward throughput"
    assert f"; stopped before {left}; {out}.partial keeps the finished states" in capsys.readouterr().err
    res = json.loads(out.read_text())
    assert res["stopped"] == {"done": 4, "of": 4, "unit": "state", "caveat": f"stopped before {left}"}
    assert f"every figure here is over those 4 only; stopped before {left}." in md.read_text()


def probe_figures(res: dict) -> list:
    """bench-probe's figures that are not wall times: each group's states and passes, pruning's errors and bounds,
    and how far bf16 moves MI."""
    return [(g["masked"], g["states"], g["passes"], g["many"]["passes"], g["bf16"]["mi_max_abs_diff"],
             [(p["eps"], p["passes"], p["max_error"], p["max_bound"], p["within_bound"]) for p in g["pruning"]])
            for g in res["probe"]]


def test_a_stopped_bench_probe_resumes_where_it_stopped(tmp_path, capsys, monkeypatch):
    """A stopped bench-probe could not go on. Its sweep, states, all-at-once probes and bf16 peak are kept in
    OUT.json.partial as each finishes; --resume runs only the parts left (stopped in the bf16 peak: only that), and
    its figures are the uninterrupted run's."""
    from mi_core.domains.sudoku import bench_probe

    out, whole = tmp_path / "probe.json", tmp_path / "whole.json"
    base = ["bench-probe", "--batch-sizes", "2", "--masked", "2,3", "--states", "2", "--min-seconds", "0.01",
            "--eps", "0.05", "--device", "cpu", "--threads", "1", "--json"]
    assert main([*base, str(whole)]) == 0
    for stop_in, nth, again in (("bench_state", 2, 3), ("throughput_sweep", 4, 0)):  # the second state; the bf16 peak
        monkeypatch.undo()
        calls, real = [], getattr(bench_probe, stop_in)

        def stops(*args, real=real, nth=nth, **kwargs):
            calls.append(1)
            if len(calls) == nth:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(bench_probe, stop_in, stops)
        assert main([*base, str(out), "--force"]) == 130
        monkeypatch.undo()
        assert main([*base, str(out)]) == 2 and "add --resume to continue it" in capsys.readouterr().err
        assert main([*base, str(out), "--resume", "--seed", "1"]) == 2
        assert "other settings (--seed 0 there, 1 now)" in capsys.readouterr().err
        states, real = [], bench_probe.bench_state
        monkeypatch.setattr(bench_probe, "bench_state", lambda *a, **k: states.append(1) or real(*a, **k))
        assert main([*base, str(out), "--resume"]) == 0 and len(states) == again
        resumed = json.loads(out.read_text())
        assert probe_figures(resumed) == probe_figures(json.loads(whole.read_text())) and "peak_bf16" in resumed
        assert "stopped" not in resumed and not partial_path(out).exists()


def test_a_second_stop_while_the_kept_figures_are_taken_keeps_nothing(tmp_path):
    """keep_stopped: a second Ctrl-C while the partial result is computed writes nothing and says so."""
    from mi_core.bench.report import keep_stopped
    from mi_core.io import ON_STOP, note_on_stop

    def again():
        raise KeyboardInterrupt

    out = tmp_path / "out.json"
    with pytest.raises(KeyboardInterrupt):
        keep_stopped(3, 5, "puzzle", [(out, None)], again, lambda res: out.write_text("{}"))
    assert ON_STOP == ["stopped again while taking the figures of the 3 of 5 puzzles finished: nothing kept"]
    assert not out.exists()
    note_on_stop(None)


def test_a_bench_stopped_while_decoding_again_says_what_it_left_out(tmp_path, model_path, capsys, monkeypatch):
    """With --attempts, a stop in a round of decoding again left out the inputs still being retried (those whose
    decodes broke the rules, the hard ones) without a word, so the kept accuracy read above the whole run's."""
    puzzles = tmp_path / "p.csv"
    solved = EASY_SOL  # no blank: right at the first decode
    puzzles.write_text("puzzle,solution,level\n" + f"{solved},{EASY_SOL},Easy\n{OTHER},,Hard\n" * 2)
    out = tmp_path / "out.json"
    base = ["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--device", "cpu",
            "--threads", "1", "--batch-size", "1", "--attempts", "3", "--json", str(out)]
    assert main(base) == 0
    whole = json.loads(out.read_text())
    first = [len(d) == 1 for d in whole["decode_passes"]]  # accepted at the first decode
    assert not all(first), "the test needs a puzzle decoded again"
    stop_decoding_after(monkeypatch, 4)  # the first batch of the second round
    assert main([*base, "--force"]) == 130
    err = capsys.readouterr().err.strip().splitlines()[-1]
    retried = first.count(False)
    kept = json.loads(out.read_text())
    assert kept["stopped"]["done"] == first.count(True) and kept["n"] == first.count(True)
    caveat = (f"{retried} puzzle{'s' if retried != 1 else ''} whose decodes so far broke the rules, with decodes left, "
              "left out (the hard ones), so the kept accuracy is higher than the whole run's would be")
    assert kept["stopped"]["caveat"] == caveat and f"; {caveat}; {partial_path(out)} keeps" in err


@pytest.mark.parametrize("argv, note", [
    (["probe", "sudoku", "--puzzle", "puzzles.csv"], 'one line of a file: "$(sed -n 1p FILE)"'),
    (["probe", "protein", "--sequence", "my_seqs.fasta"], "--fasta FILE reads one"),
])
def test_a_state_option_given_a_file_name_says_it_takes_the_states_text(argv, note, capsys):
    """--puzzle puzzles.csv was refused for its letters ('p' at position 1) without a word that the option takes a
    puzzle's own characters, not a file of them."""
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and err[0].endswith(f"({note})")
    assert f"{argv[-1]} looks like a file's name, but the option takes a state's own characters" in err[0]
