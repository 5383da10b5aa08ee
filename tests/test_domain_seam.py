"""The domain seam: a third domain registered from the tests alone (``tests/toy_domain.py``) is probed,
gets estimator data, decodes with every sampler, is benchmarked and is listed by the app, with no core file
knowing it. Its model is exact, so the probe and the data are checked against enumerated MI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from toy_domain import TOY, exact_mi

from mi_core import cli
from mi_core.decoding import STRATEGIES


@pytest.fixture
def toy():
    from mi_core.domain import register, unregister

    register(TOY)
    yield TOY
    unregister(TOY.key)


def test_registry_and_app_list_the_toy(toy):
    from mi_core.domain import cli_names, get_domain
    from mi_lens_app.domains import DOMAINS, make_puzzle

    assert get_domain("toy6") is toy and "toy6" in cli_names()
    assert DOMAINS["toy6"].layout == "sequence"
    puzzle = make_puzzle(DOMAINS["toy6"], "ab__e_")
    assert puzzle.blanks == [2, 3, 5] and puzzle.text == "ab__e_"
    with pytest.raises(ValueError, match="'z' at position 3 is not"):
        toy.parse_state("abz___")
    with pytest.raises(ValueError, match="already registered"):
        from mi_core.domain import register

        register(TOY)


def test_load_model_gives_the_interface(toy):
    from mi_core.models.loading import load_model

    model = load_model(domain="toy6")
    assert (model.seq_len, model.max_len, model.hidden_size, model.n_values, model.mask_id) == (6, 6, 13, 6, 0)
    assert model.device == torch.device("cpu") and model.dtype == torch.float32


def test_probe_command_matches_enumeration(toy, tmp_path, capsys):
    out = tmp_path / "probe.json"
    assert cli.main(["probe", "toy6", "--state", "ab____", "--json", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result["domain"] == "toy6" and result["sequence"] == "ab____"  # the key estimate writes too
    want = exact_mi(torch.tensor(toy.parse_state("ab____")))
    np.testing.assert_allclose(np.asarray(result["mi"]), want.numpy(), atol=1e-6)
    assert want.max() > 0.01  # the check has something to see


def test_estimator_data_every_sampler_and_bench(toy, tmp_path):
    from mi_core.decoding.selector import make_order_nets, save_order_net
    from mi_core.train.estimator_data import load_shards

    data_dir = tmp_path / "data"
    argv = ["make-estimator-data", "toy6", "--out", str(data_dir), "--states", "8", "--shard-size", "4"]
    assert cli.main(argv) == 0
    data, manifest = load_shards(data_dir)
    assert manifest["domain"] == "toy6" and manifest["model"] is None and data["mi"].shape == (8, 6, 6)
    for s in range(8):
        np.testing.assert_allclose(data["mi"][s].numpy(), exact_mi(data["tokens"][s]).numpy(), atol=1e-6)
    assert cli.main(argv) == 0  # resumes: every shard is there

    estimator = tmp_path / "est.safetensors"
    assert cli.main(["train-estimator", "--data", str(data_dir), "--out", str(estimator), "--steps", "20",
                     "--eval-every", "10", "--variants", "log:free", "--batch", "4"]) == 0
    evaluation = tmp_path / "eval.json"
    assert cli.main(["eval-estimator", "toy6", "--estimator", str(estimator), "--states", "5", "--no-markdown",
                     "--json", str(evaluation)]) == 0
    res = json.loads(evaluation.read_text())
    assert res["domain"] == "toy6" and res["n_states"] == 5 and "rules" not in res and "by_separation" in res
    assert 5 < res["exact_passes"] <= round(5 + 6 * 5 * res["mean_masked"])  # values of p = 0 are skipped
    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(13)[1], selector)

    puzzles = tmp_path / "toy.txt"
    puzzles.write_text("# three toy states\nab____\n______\nf_d_b_\n")
    extra = {"mi": ["estimator=" + str(estimator)], "learned": ["selector=" + str(selector)],
             "learned_mi": ["selector=" + str(selector), "estimator=" + str(estimator)]}
    for name in STRATEGIES:
        out = tmp_path / f"{name}.json"
        sets = [a for s in extra.get(name, []) for a in ("--set", s)]
        assert cli.main(["bench", "toy6", "--puzzles", str(puzzles), "--sampler", name, *sets,
                         "--json", str(out)]) == 0, name
        result = json.loads(out.read_text())
        assert result["n"] == 3 and 0 <= result["accuracy"] <= 1 and result["mean_passes"] >= 1, name
        if name in ("sequential", "mi_exact"):  # an exact model decoded one dependent value at a time
            assert result["accuracy"] == 1.0, name

    estimate = tmp_path / "estimate.json"
    assert cli.main(["estimate", "toy6", "--state", "ab____", "--estimator", str(estimator),
                     "--json", str(estimate)]) == 0
    assert np.asarray(json.loads(estimate.read_text())["mi"]).shape == (6, 6)
    rows = tmp_path / "sweep.json"
    assert cli.main(["sweep", "toy6", "--puzzles", str(puzzles), "--grid", "sequential", "--grid", "topk:k=1,3",
                     "--grid", "mi:gamma=0.5", "--estimator", str(estimator), "--json", str(rows)]) == 0
    swept = json.loads(rows.read_text())
    assert [(r["sampler"], r["params"]) for r in swept] == [("sequential", {}), ("topk", {"k": 1}),
                                                            ("topk", {"k": 3}), ("mi", {"gamma": 0.5})]
    assert swept[0]["accuracy"] == 1.0 and all(r["n"] == 3 for r in swept)


def test_the_toys_step_counts_default_below_its_six_positions(toy, tmp_path, capsys):
    """The toy's order task declares no budgets: train-order and bench-order derive them from its 6 positions (they
    were Sudoku's 5,10,15,20); sweep's default grid leaves out topk k=7 and mask_predict steps=10,20 (a pass of 7,
    or 10 passes, for 6 positions), and runs a grid given as given."""
    assert cli.parse(["train-order", "toy6"])[1].steps_budget == "2,3,4,5"
    assert cli.parse(["bench-order", "toy6", "--puzzles", "p.txt", "--json", "x.json"])[1].budgets == [2, 3, 4, 5]
    puzzles, rows = tmp_path / "toy.txt", tmp_path / "sweep.json"
    puzzles.write_text("ab____\n______\n")
    assert cli.main(["sweep", "toy6", "--puzzles", str(puzzles), "--samplers", "topk,mask_predict", "--json",
                     str(rows)]) == 0
    assert [(r["sampler"], r["params"]) for r in json.loads(rows.read_text())] == [("topk", {"k": 2}),
                                                                                  ("topk", {"k": 4})]
    assert ("note: the default grid leaves out topk k=7, mask_predict steps=10, mask_predict steps=20: a count at or "
            "above the 6 positions of the longest input") in capsys.readouterr().err
    assert cli.main(["sweep", "toy6", "--puzzles", str(puzzles), "--grid", "topk:k=7", "--json", str(rows),
                     "--force"]) == 0
    assert [r["params"] for r in json.loads(rows.read_text())] == [{"k": 7}]


def test_a_default_grid_left_with_no_point_says_why(toy, tmp_path, capsys):
    """``--samplers mask_predict`` on the toy's 6 positions leaves no point of the default grid: the error said
    'the grid is empty after --samplers filtering and skipped mi rows' (neither the cause), after loading the model."""
    puzzles = tmp_path / "toy.txt"
    puzzles.write_text("ab____\n")
    assert cli.main(["sweep", "toy6", "--puzzles", str(puzzles), "--samplers", "mask_predict", "--json",
                     str(tmp_path / "sweep.json")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "error: every point of the default grid left has a count at or above the 6 positions of the longest input: "
        "give the points to run with --grid, or other --samplers")


def protocol_members(proto) -> set[str]:
    """The methods a protocol declares (its data members may be set per instance)."""
    return {n for n, v in vars(proto).items() if not n.startswith("_") and (callable(v) or isinstance(v, staticmethod))}


def test_every_state_source_declares_the_protocol(toy):
    """Each domain's state source (the shipped ones and the toy) has every member of ``StateSource``."""
    from mi_core.domain import DOMAINS, HeldOutStates, StateSource

    sources = [d.states for d in DOMAINS.values() if d.states is not None]
    assert len(sources) >= 3
    for source in sources:
        missing = sorted(m for m in protocol_members(StateSource) if not hasattr(source, m))
        assert missing == [], f"{source.__name__} lacks {missing}"
        returns = source.held_out.__annotations__.get("return")
        held = getattr(__import__(source.__module__, fromlist=["x"]), returns, source) if isinstance(returns, str) else source
        missing = sorted(m for m in protocol_members(HeldOutStates) if not hasattr(held, m))
        assert missing == [], f"{held.__name__} lacks {missing}"


def test_no_domain_is_named_outside_the_domain_packages():
    """No module outside ``mi_core/domains/`` imports a domain package or holds a domain's key or name as a
    string (the registry finds the domains; files record their domain's key)."""
    import ast
    from pathlib import Path

    from mi_core.domain import DOMAINS

    names = {n for d in DOMAINS.values() for n in (d.key, *d.names)}
    root = Path(__file__).resolve().parents[1]
    bad = []
    for path in sorted((root / "mi_core").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("mi_core/domains/"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            imported = [a.name for a in node.names] if isinstance(node, ast.Import) else [module or ""]
            if any(m.startswith("mi_core.domains") for m in imported):
                bad.append(f"{rel}:{node.lineno} imports {imported}")
            if isinstance(node, ast.Constant) and node.value in names:
                bad.append(f"{rel}:{node.lineno} names {node.value!r}")
    assert bad == []


def test_train_command_trains_the_engine_mdm_on_the_toy(toy, tmp_path, capsys):
    """``train toy6`` runs the engine's sequence task from the toy's one file: its validation CE ends well
    under the uniform guess's log 6 nats, and the weights record the toy's key."""
    out = tmp_path / "toy.safetensors"
    argv = ["train", "toy6", "--out", str(out), "--steps", "60", "--d-model", "32", "--n-layers", "2", "--n-heads",
            "2", "--d-ff", "64", "--batch", "32", "--eval-every", "30", "--log-every", "30", "--min-len", "1",
            "--max-len", "6", "--warmup", "5", "--lr", "3e-3", "--no-bf16", "--dropout", "0", "--threads", "1"]
    assert cli.main(argv) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["best_val_ce"] < np.log(6) - 0.25, result
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["domain"] == "toy6" and meta["config"]["max_len"] == 6


def test_train_order_runs_the_engine_order_task_on_the_toy(toy, tmp_path, capsys):
    """``train-order toy6`` trains a selector with the engine's sequence order task over a trained toy MDM, from
    the toy's one file: the selector and its log are written, and validation scores every budget."""
    from toy_domain import ToyMDM, ToyTask

    from mi_core.models.mdm import SequenceMDMConfig

    mdm = tmp_path / "mdm.safetensors"
    ToyTask.save(ToyMDM(SequenceMDMConfig(max_len=6, d_model=16, n_layers=1, n_heads=2, d_ff=32)), mdm)
    out = tmp_path / "sel.safetensors"
    assert cli.main(["train-order", "toy6", "--model", str(mdm), "--out", str(out), "--lengths", "6-6",
                     "--eval-per-length", "8", "--steps-budget", "2,3", "--updates", "4", "--batch", "4",
                     "--samples", "2", "--eval-every", "2", "--no-bf16", "--threads", "1"]) == 0
    log = [json.loads(line) for line in out.with_name(out.stem + "_log.jsonl").read_text().splitlines()]
    evals = [row for row in log if "update" in row]
    assert out.is_file() and [r["update"] for r in evals] == [2, 4] and log[-1]["done"]
    assert {"val_T2", "val_T3", "margin_T2", "val_mean"} <= set(evals[-1]) and evals[-1]["val_mean"] < 0
    meta = json.loads(out.with_suffix(".json").read_text())  # the config kept beside the task's own "train" count
    assert meta["train"]["budgets"] == [2, 3] and meta["data_train"] == 600 and meta["domain"] == "toy6"
    states, rows = tmp_path / "toy.txt", tmp_path / "order.json"  # the selector benchmarked on the MDM it learned
    states.write_text("ab____\n______\n")  # (--model was ignored: the exact model's hidden size refused it)
    assert cli.main(["bench-order", "toy6", "--model", str(mdm), "--puzzles", str(states), "--selector", str(out),
                     "--budgets", "2", "--gammas", "", "--json", str(rows), "--threads", "1"]) == 0
    assert [r["T"] for r in json.loads(rows.read_text()) if r["sampler"] == "learned"] == [2]


def test_train_order_stops_with_one_line_when_its_output_is_closed(toy, tmp_path, monkeypatch, capsys):
    """``train-order ... | head -2``: the log line after the reader left raised BrokenPipeError with a traceback;
    now the run stops as on Ctrl-C, naming the checkpoint to resume from, with the status of SIGPIPE."""
    import io
    import sys

    from toy_domain import ToyMDM, ToyTask

    from mi_core.models.mdm import SequenceMDMConfig

    class Closed(io.StringIO):  # a pipe whose reader took the header and one log point
        def write(self, text):
            if '"update": 4' in text:
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    mdm, out = tmp_path / "mdm.safetensors", tmp_path / "sel.safetensors"
    ToyTask.save(ToyMDM(SequenceMDMConfig(max_len=6, d_model=16, n_layers=1, n_heads=2, d_ff=32)), mdm)
    monkeypatch.setattr(sys, "stdout", Closed())
    assert cli.main(["train-order", "toy6", "--model", str(mdm), "--out", str(out), "--lengths", "6-6",
                     "--eval-per-length", "8", "--steps-budget", "2", "--updates", "6", "--batch", "4",
                     "--samples", "2", "--eval-every", "2", "--no-bf16", "--threads", "1"]) == 141
    err = capsys.readouterr().err
    assert err.startswith("stopped: standard output was closed") and "Traceback" not in err
    assert f"{out.with_suffix('.ckpt')} holds update 2: add --resume" in err


def test_bench_order_decodes_the_toys_inputs_at_each_budget(toy, tmp_path):
    """``bench-order toy6`` (the engine's default order benchmark: the domain brings none) runs the heuristics
    and the learned order at each budget and eb on the toy's states, scored by the toy's own metric."""
    from mi_core.decoding.selector import make_order_nets, save_order_net
    from mi_core.io import file_sha256

    selector = tmp_path / "sel.safetensors"
    save_order_net(make_order_nets(13)[1], selector)
    states = tmp_path / "toy.txt"
    states.write_text("ab____\n______\nf_d_b_\n")
    out = tmp_path / "order.json"
    assert cli.main(["bench-order", "toy6", "--puzzles", str(states), "--selector", str(selector),
                     "--budgets", "2,6", "--gammas", "0.5", "--json", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["T"]) for r in rows[:4]] == [("random", 2), ("top_prob", 2), ("top_margin", 2),
                                                         ("learned", 2)]
    assert {r["sampler"] for r in rows} == {"random", "top_prob", "top_margin", "learned", "eb", "sequential"}
    assert all(r["n"] == 3 and 0 <= r["accuracy"] <= 1 for r in rows)
    assert rows[-1]["sampler"] == "sequential" and rows[-1]["accuracy"] == 1.0  # the exact model, one at a time
    assert all(r["mean_passes"] <= 2 for r in rows if r["T"] == 2 and r["sampler"] != "learned")
    assert "| learned |" in out.with_suffix(".md").read_text()
    sha = file_sha256(selector)  # a learned row names the selector it ran, as bench's result does
    assert [r.get("selector_sha256") for r in rows if r["sampler"] == "learned"] == [sha, sha]
    assert all("selector" not in r for r in rows if r["sampler"] != "learned")
    # --modes runs learned in each mode named (it ran threshold mode only, and rank needed sweep)
    assert cli.main(["bench-order", "toy6", "--puzzles", str(states), "--selector", str(selector), "--budgets", "2",
                     "--gammas", "", "--modes", "rank,threshold", "--json", str(out), "--force"]) == 0
    learned = [r for r in json.loads(out.read_text()) if r["sampler"] == "learned"]
    assert [r["params"] for r in learned] == [{"steps": 2, "mode": "rank"}, {"steps": 2, "mode": "threshold"}]
    assert learned[0]["mean_passes"] == 2  # rank mode spends the budget



def test_the_default_order_bench_keeps_its_rows_and_resumes(toy, tmp_path, monkeypatch):
    """The engine's own bench-order (the toy brings none) keeps each finished row in ``OUT.json.partial`` and
    ``--resume`` runs only the rest: the rows equal an uninterrupted run's."""
    from mi_core.bench import decode
    from mi_core.decoding.selector import make_order_nets, save_order_net

    selector, states = tmp_path / "sel.safetensors", tmp_path / "toy.txt"
    save_order_net(make_order_nets(13)[1], selector)
    states.write_text("ab____\n______\nf_d_b_\n")
    argv = ["bench-order", "toy6", "--puzzles", str(states), "--selector", str(selector), "--budgets", "2",
            "--gammas", "0.5", "--json"]
    assert cli.main([*argv, str(tmp_path / "whole.json")]) == 0
    calls, real = [], decode.evaluate

    def stops(*args, **kwargs):  # a Ctrl-C as the third row begins, then none
        calls.append(1)
        if len(calls) == 3 and stopping:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(decode, "evaluate", stops)
    stopping = True
    assert cli.main([*argv, str(tmp_path / "o.json")]) == 130
    calls[:], stopping = [], False
    assert cli.main([*argv, str(tmp_path / "o.json"), "--resume"]) == 0
    rows = json.loads((tmp_path / "o.json").read_text())
    assert len(calls) == len(rows) - 2 and not (tmp_path / "o.json.partial").exists()
    whole = json.loads((tmp_path / "whole.json").read_text())
    assert [{**r, "seconds": 0} for r in rows] == [{**r, "seconds": 0} for r in whole]

def test_generate_fills_the_toys_template(toy, capsys):
    """``generate`` serves every sequence domain, a plugin's too: the exact model fills a template so that all
    six letters differ, one letter a pass (sequential)."""
    assert cli.main(["generate", "toy6", "--template", "ab____", "--n", "3", "--temperature", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 6 and all("passes=4" in h for h in lines[::2])
    assert all(s.startswith("ab") and sorted(s) == list("abcdef") for s in lines[1::2])


@pytest.mark.parametrize("path", ["pages/1_MI_maps.py", "pages/2_Exact_vs_estimated.py", "pages/3_Decoding.py",
                                  "pages/4_What_if.py"])
def test_the_app_pages_open_on_the_toy(toy, path):
    """Each page that shows one state opens on the toy (picked in the sidebar's domain switch) without an
    exception: the app reads the toy from the registry alone."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page(path)
    at.run()
    switch = at.radio(key="domain")
    label = next(o for o in switch.options if "toy6" in str(o) or "toy" in str(o).lower())
    switch.set_value(label).run()
    assert not at.exception, [e.value for e in at.exception]
    assert "toy" in " ".join(str(v) for v in switch.options).lower()


def test_a_failed_builtin_import_is_retried_and_reraised():
    import subprocess
    import sys

    code = ("import mi_core.domain as d\nd.BUILTIN = 'mi_core.domains.no_such_module'\nfor _ in range(2):\n"
            "    try:\n        d.get_domain('sudoku')\n    except Exception as e:\n        print(type(e).__name__)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                         text=True, check=True).stdout.split()
    assert out == ["ModuleNotFoundError", "ModuleNotFoundError"]  # not an empty registry the second time


def test_the_registry_can_change_while_another_loop_reads_it():
    """The app's warm-up thread walks the domains while a page or a test registers one (CI once saw "dictionary
    keys changed during iteration" in that thread)."""
    from mi_core.domain import DOMAINS, register, unregister

    seen = []
    try:
        for key in DOMAINS:
            seen.append(key)
            register(TOY, replace=True)
        assert TOY.key not in seen and TOY.key in DOMAINS
        for domain in DOMAINS.values():
            unregister(TOY.key)
            seen.append(domain.key)
        assert TOY.key in seen and TOY.key not in DOMAINS
    finally:
        unregister(TOY.key)


def _run_with_plugins(modules: str, *argv: str, pythonpath: Path | None = None, cwd: Path | None = None):
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    paths = [str(root / "tests"), str(root), *([str(pythonpath)] if pythonpath else [])]
    env = {**os.environ, "MI_LENS_DOMAINS": modules, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run([sys.executable, "-m", "mi_core", *argv], cwd=cwd or root, env=env, capture_output=True,
                          text=True)


def test_a_domain_module_named_in_the_environment_serves_the_command_line(tmp_path):
    """A domain from outside ``mi_core`` reaches a fresh process (the command line, the app, a worker) through
    ``MI_LENS_DOMAINS``, with no file of the package edited."""
    out = tmp_path / "mi.json"
    run = _run_with_plugins("toy_plugin", "probe", "toy6", "--state", "ab____", "--json", str(out), "--no-progress")
    assert run.returncode == 0, run.stderr
    mi = np.array(json.loads(out.read_text())["mi"])
    assert np.allclose(mi, exact_mi(torch.tensor([1, 2, 0, 0, 0, 0])).numpy(), atol=1e-6)
    assert "toy6" in _run_with_plugins("toy_plugin", "probe", "--help").stdout


def test_a_broken_domain_module_is_named_and_the_shipped_domains_still_serve():
    run = _run_with_plugins("no_such_domain_module, toy_plugin", "probe", "toy6", "--help")
    assert run.returncode == 0, run.stderr  # the module after the broken one still loads
    assert ("warning: the domain module 'no_such_domain_module' (MI_LENS_DOMAINS) did not load: "
            "ModuleNotFoundError: No module named 'no_such_domain_module'") in run.stderr
    assert "Traceback" not in run.stderr
    run = _run_with_plugins("no_such_domain_module", "probe", "toy6", "--state", "ab____")
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1].startswith("error:") and "toy6" in run.stderr.splitlines()[-1]
    run = _run_with_plugins("toy_plugin,toy_plugin", "probe", "--help")  # a module named twice is imported once
    assert run.returncode == 0 and "warning" not in run.stderr


def test_a_domain_file_named_in_place_of_its_module_is_told_how_to_name_it(tmp_path):
    """A plugin author who wrote the file's path (``MI_LENS_DOMAINS=/tmp/x/mine.py``), or a module whose folder is
    not on PYTHONPATH, was told only "No module named '/tmp/x/mine'"."""
    plugin = tmp_path / "mine.py"
    plugin.write_text("VALUE = 1\n")
    run = _run_with_plugins(str(plugin), "probe", "--help")
    assert run.returncode == 0 and "Traceback" not in run.stderr
    assert (f"MI_LENS_DOMAINS names modules, not files: for {plugin} give PYTHONPATH={tmp_path} and "
            "MI_LENS_DOMAINS=mine") in run.stderr, run.stderr
    run = _run_with_plugins("./mine.py", "probe", "--help", cwd=tmp_path)
    assert ("names modules, not files: for ./mine.py give PYTHONPATH=. and MI_LENS_DOMAINS=mine" in run.stderr
            and "Traceback" not in run.stderr), run.stderr  # was "TypeError: the 'package' argument is required"
    run = _run_with_plugins("no_such_domain_module", "probe", "--help")
    assert ("No module named 'no_such_domain_module' (is the folder that holds it on PYTHONPATH, or its package "
            "installed?)") in run.stderr, run.stderr
    (tmp_path / "toy_plugin_broken.py").write_text("import no_such_dependency\n")  # its own import fails
    run = _run_with_plugins("toy_plugin_broken", "probe", "--help", pythonpath=tmp_path)
    assert "No module named 'no_such_dependency'" in run.stderr and "PYTHONPATH" not in run.stderr, run.stderr


def test_a_domain_module_that_registers_nothing_is_named(tmp_path):
    """A module that imports but registers no domain (a namesake of the plugin, a file without its register call)
    said nothing: the command then called the domain an invalid choice, with no word of the module."""
    (tmp_path / "registers_nothing.py").write_text("VALUE = 1\n")
    run = _run_with_plugins("registers_nothing", "probe", "toy6", "--state", "ab____", pythonpath=tmp_path)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert ("warning: the domain module 'registers_nothing' (MI_LENS_DOMAINS) registered no domain: a domain module "
            "calls mi_core.domain.register(...) as it is imported") in run.stderr


def test_a_module_that_replaces_a_shipped_domain_is_not_said_to_register_none(tmp_path):
    """``register(dataclasses.replace(sudoku, ...), replace=True)`` keeps the registry's keys: the module was said to
    have registered no domain, though the command then served its domain."""
    (tmp_path / "my_sudoku.py").write_text(
        "import dataclasses\nfrom mi_core.domain import DOMAINS, register\n"
        "register(dataclasses.replace(DOMAINS.domains['sudoku9'], summary='mine'), replace=True)\n")
    run = _run_with_plugins("my_sudoku", "probe", "sudoku", "--help", pythonpath=tmp_path)
    assert run.returncode == 0 and "registered no domain" not in run.stderr, run.stderr


APP_FIRST_PAGE = """
import sys
from streamlit.testing.v1 import AppTest
at = AppTest.from_file(sys.argv[1], default_timeout=120).run()
print([e.value for e in at.exception] or "no exception")
print("\\n".join([m.value for m in at.markdown] + [w.value for w in at.warning]))
"""


def test_a_fresh_server_names_the_plugin_domains_on_its_first_page():
    """``MI_LENS_DOMAINS=... streamlit run app.py``: the first page a fresh server drew read the plugin lists before
    anything had looked a domain up (the registry loads on its first lookup), so it named no plugin domain and no
    module that failed to load."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "MI_LENS_DOMAINS": "toy_plugin,no_such_domain_module", "MI_LENS_WARM": "0",
           "PYTHONPATH": os.pathsep.join([str(root / "tests"), str(root)])}
    run = subprocess.run([sys.executable, "-c", APP_FIRST_PAGE, str(root / "app.py")], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "no exception" in run.stdout, run.stdout + run.stderr
    assert "from outside MI Lens: **All-different 6 (toy)** (*toy6* under *Domain*)" in run.stdout
    assert "The domain module 'no_such_domain_module' (MI_LENS_DOMAINS) did not load" in run.stdout


def test_the_app_names_a_domain_module_that_did_not_load(monkeypatch):
    from streamlit.testing.v1 import AppTest

    from mi_core import domain

    problem = "the domain module 'lab_domains' (MI_LENS_DOMAINS) did not load: ImportError: no GPU here"
    monkeypatch.setattr(domain, "PLUGIN_PROBLEMS", [problem])
    monkeypatch.setattr("mi_lens_app.frame.PLUGIN_PROBLEMS", domain.PLUGIN_PROBLEMS)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page("pages/1_MI_maps.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("The domain module 'lab_domains'" in w.value for w in at.warning)
    assert at.radio(key="domain").options[:2] == ["9x9", "4x4"]  # the shipped domains still serve


def test_a_module_that_fails_halfway_registers_none_of_its_domains():
    run = _run_with_plugins("clash_plugin", "probe", "half", "--help")
    last = run.stderr.splitlines()[-1]
    assert run.returncode == 2 and last.startswith("error:") and "invalid choice: 'half'" in last
    assert "'half'" not in last.split("choose from")[1]  # the module's first domain was taken out again
    assert "warning: the domain module 'clash_plugin' (MI_LENS_DOMAINS) did not load: ValueError: domain name " \
           "'protein' is already registered" in run.stderr


def test_a_package_entry_point_names_a_domain_module(monkeypatch):
    from importlib.metadata import EntryPoint

    from mi_core import domain

    points = [EntryPoint("lab", "lab_domains.brackets:register", domain.ENTRY_POINTS)]
    monkeypatch.setattr(domain.importlib.metadata, "entry_points", lambda group: points if group == domain.ENTRY_POINTS
                        else [])
    monkeypatch.setenv(domain.PLUGINS, " toy_plugin ,, ")
    assert domain.plugin_modules() == [("toy_plugin", "MI_LENS_DOMAINS"),
                                       ("lab_domains.brackets", "entry point 'lab' of a package")]


def test_home_and_about_name_the_domains_a_plugin_brought(toy, monkeypatch):
    """A plugin's domain is listed on the landing page and described on About, with the module that brought it."""
    import dataclasses

    from streamlit.testing.v1 import AppTest

    from mi_core import domain

    summary = "Six distinct letters in six cells."
    monkeypatch.setitem(domain.DOMAINS.domains, TOY.key, dataclasses.replace(TOY, summary=summary))
    monkeypatch.setitem(domain.PLUGIN_DOMAINS, TOY.key, ("toy_plugin", "MI_LENS_DOMAINS"))
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("from outside MI Lens: **All-different 6 (toy)** (*toy6* under *Domain*)" in m.value
               for m in at.markdown)
    at.switch_page("pages/6_About.py")
    at.run()
    assert any(m.value.startswith("**All-different 6 (toy)** (a plugin domain, from the module `toy_plugin`, named by "
                                  "MI_LENS_DOMAINS). " + summary) for m in at.markdown)
    domain.unregister(TOY.key)
    assert TOY.key not in domain.PLUGIN_DOMAINS


def test_weights_recording_another_domain_are_refused_by_a_loader_that_would_read_them(tmp_path):
    """A domain whose loader reads the same config class (here a 20-letter domain over the protein MDM's) would
    load another domain's weights: the domain each file records is checked first."""
    import dataclasses

    from mi_core.domain import get_domain, register, unregister
    from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, load_protein_mdm, save_protein_mdm
    from mi_core.models.base import ModelFileError
    from mi_core.models.loading import load_model

    peptide = dataclasses.replace(get_domain("protein"), key="peptide", names=("peptide",), short="peptide",
                                  label="Peptide", model_loader=lambda spec, device: (load_protein_mdm(spec, device), "MDM"))
    path = tmp_path / "protein.safetensors"
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=16, d_model=16, n_layers=1, n_heads=2, d_ff=16)), path)
    register(peptide)
    try:
        with pytest.raises(ModelFileError, match="protein.safetensors is a model for protein .*, not for peptide"):
            load_model(path, domain="peptide")
        assert load_model(path, domain="protein").domain == "protein"
    finally:
        unregister("peptide")
