"""File paths as users type them (docs/reliability.md): a quoted ``~``, non-ASCII names, links that lead
nowhere, and files that are not regular files. Each case runs in-process through :func:`mi_core.cli.main`
from a scratch working folder and is refused (or done) before any model pass."""

import json
import os
import signal
from pathlib import Path

import pytest

from mi_core.cli import main

SWEEP = "sweep_top1465.json"  # a sweep's rows, shipped
EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."


@pytest.fixture
def work(tmp_path, monkeypatch):
    """A working folder outside the repository, and a home folder of its own (``~``)."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return work


def run(argv, capsys) -> tuple[int, str]:
    rc = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return rc, err


def test_quoted_tilde_is_the_home_folder(work, capsys):
    home = Path.home()
    (home / "r.json").write_text("{}\n")
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "~/r.json"], capsys)
    assert rc == 2 and f"--json {home / 'r.json'} already exists" in err
    assert not (work / "~").exists()  # no folder named '~' made in the working folder
    (home / "lone.md").write_text("# Notes\n<!-- ab:start -->\nold\n## My own text\n")
    rc, err = run(["bench-probe", "--json", "~/r.json", "--markdown", "~/lone.md"], capsys)
    assert rc == 2 and f"error: argument --markdown: {home / 'lone.md'}: its section" in err


def test_sampler_file_with_a_non_ascii_name(work, capsys):
    """``--set selector=PATH``: a path is text, not a number, so 'é' and '中' are its own letters."""
    repo = Path(__file__).resolve().parent.parent
    folder = work / "模型 é"
    folder.mkdir()
    for suffix in (".safetensors", ".json"):
        src = repo / "assets" / f"sudoku_order_selector_recurrent{suffix}"
        (folder / f"sélecteur{suffix}").write_bytes(src.read_bytes())
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--threads", "1", "--device", "cpu",
                   "--model", str(repo / "assets" / "sudoku_peer_recurrent.safetensors"), "--sampler", "learned",
                   "--set", "selector=模型 é/sélecteur.safetensors", "--set", "steps=5", "--json", "r.json"], capsys)
    assert rc == 0, err
    assert json.loads((work / "r.json").read_text())["params"]["selector"] == "模型 é/sélecteur.safetensors"


def test_output_name_with_a_superscript_digit(work, capsys):
    """'r².json' is a file name, not a number: only the checks of a path apply to it."""
    (work / "afile").write_text("a file, not a folder\n")
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "afile/r².json"], capsys)
    assert rc == 2 and "error: --json afile/r².json: afile is a file, not a directory" in err
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY.replace("9", "\u0669", 1)], capsys)  # a puzzle: refused
    assert rc == 2 and "U+0669 ARABIC-INDIC DIGIT NINE" in err


def test_output_over_a_link_that_leads_nowhere(work, capsys):
    """A dangling link is a file the user made: writing --json there replaced it without --force."""
    (work / "r.json").symlink_to("elsewhere/r.json")
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "r.json"], capsys)
    assert rc == 2 and "error: --json r.json already exists, a link to elsewhere/r.json (which does not exist)" in err
    assert (work / "r.json").is_symlink()


@pytest.mark.parametrize("option", ["--puzzles", "--model"])
def test_input_that_is_a_pipe_or_a_link_to_nothing(work, capsys, option):
    """A named pipe is there but is no file to read; a link names where it leads. Both said 'not found'."""
    os.mkfifo(work / "pipe.csv")
    (work / "gone.csv").symlink_to("moved/p.csv")
    (work / "p.txt").write_text(EASY + "\n")
    for name, expect in (("pipe.csv", "error: pipe.csv is not a regular file (a named pipe, socket or device)"),
                         ("gone.csv", "gone.csv is a link to moved/p.csv, which does not exist")):
        argv = ["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--model", "no.safetensors"]
        argv[argv.index(option) + 1] = name
        rc, err = run(argv, capsys)
        assert rc == 2 and expect in err, err
    rc, err = run(["probe", "protein", "--fasta", "pipe.csv", "--model", "mdm"], capsys)
    assert rc == 2 and "error: pipe.csv is not a regular file" in err


def test_training_file_too_small_to_hold_sequences_out(work, capsys):
    """A FASTA file of three sequences splits into no validation sequences: one line, not ZeroDivisionError."""
    (work / "three.fa").write_text("".join(f">p{i}\n{'MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ'[i:]}\r\n" for i in range(3)))
    rc, err = run(["train", "protein", "--fasta", "three.fa", "--steps", "1", "--threads", "1", "--device", "cpu",
                   "--out", "m.safetensors"], capsys)
    assert rc == 2 and "error: the data gives no validation sequences (fasta three.fa, train 3, val 0" in err
    assert not list(work.glob("m*"))


def test_shipped_defaults_from_another_working_folder(work, capsys):
    """The default model and estimator lie in the checkout: a command run elsewhere said 'weights file not
    found: assets/sudoku_peer_recurrent.safetensors'."""
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--threads", "1", "--device", "cpu",
                   "--sampler", "mi", "--json", "r.json"], capsys)
    assert rc == 0, err
    result = json.loads((work / "r.json").read_text())
    assert result["model"] == "assets/sudoku_peer_recurrent.safetensors" and result["accuracy"] == 1.0
    assert result["estimator"] == "assets/sudoku_mi_estimator_recurrent.safetensors"


def test_pool_file_that_is_a_pipe(work, capsys):
    """gzip.open of a named pipe waits for a writer for good: train-order --pool-file hung before any work."""
    os.mkfifo(work / "pool.txt.gz")

    def hung(*_):
        raise TimeoutError("train-order --pool-file PIPE still reading after 60 s")

    signal.signal(signal.SIGALRM, hung)
    signal.alarm(60)
    try:
        rc, err = run(["train-order", "sudoku", "--pool-file", "pool.txt.gz", "--out", "s.safetensors", "--steps-budget",
                       "1", "--threads", "1", "--device", "cpu"], capsys)
    finally:
        signal.alarm(0)
    assert rc == 2 and "error: pool.txt.gz is not a regular file (a named pipe, socket or device)" in err


def test_tilde_in_text_typed_paths(work, capsys):
    """A selector given with --set and the --fasta of eval-estimator are text, not path options: '~' is the home
    folder there too (it was looked for as a folder named '~')."""
    repo, home = Path(__file__).resolve().parent.parent, Path.home()
    for suffix in (".safetensors", ".json"):
        src = repo / "assets" / f"sudoku_order_selector_recurrent{suffix}"
        (home / f"sel{suffix}").write_bytes(src.read_bytes())
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--threads", "1", "--device", "cpu",
                   "--sampler", "learned", "--set", "selector=~/sel.safetensors", "--json", "r.json"], capsys)
    assert rc == 0, err
    assert json.loads((work / "r.json").read_text())["selector_sha256"]
    rc, err = run(["eval-estimator", "protein", "--fasta", "~/x.fa", "--json", "e.json"], capsys)
    assert rc == 2 and f"FASTA file not found: {home / 'x.fa'}" in err


def test_weights_through_a_link(work, capsys):
    """A link to shipped weights: the config is read beside the link, and the message says which to link."""
    repo = Path(__file__).resolve().parent.parent
    (work / "m.safetensors").symlink_to(repo / "assets" / "sudoku_peer_recurrent.safetensors")
    (work / "p.txt").write_text(EASY + "\n")
    argv = ["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--threads", "1", "--model", "m.safetensors"]
    rc, err = run(argv, capsys)
    assert rc == 2 and (f"config file not found beside the weights: m.json (m.safetensors is a link to "
                        f"{repo / 'assets' / 'sudoku_peer_recurrent.safetensors'}: link "
                        f"{repo / 'assets' / 'sudoku_peer_recurrent.json'} as m.json too)") in err
    (work / "m.json").symlink_to(repo / "assets" / "sudoku_peer_recurrent.json")
    assert run(argv, capsys)[0] == 0


def test_estimator_data_with_a_bad_fasta_writes_nothing(work, capsys):
    """make-estimator-data wrote --out/manifest.json before it read --fasta, and left it when the file failed."""
    (work / "seqs.fa").mkdir()
    rc, err = run(["make-estimator-data", "protein", "--fasta", "seqs.fa", "--out", "data", "--states", "1",
                   "--threads", "1", "--device", "cpu"], capsys)
    assert rc == 2 and "error: seqs.fa is a directory, not a FASTA file" in err
    assert not (work / "data").exists()


def test_antibody_model_file_of_another_kind(work, capsys):
    """--model of the antibody domain takes AntiBERTy's folder: a JSON file there said "'.' holds no
    pytorch_model.bin", and '~/ab' was looked for under a folder named '~'."""
    (work / "cfg.json").write_text('{"a": 1}\n')
    vh = "QVQLQQSGGELAKPGASVKVSCKASGYTFSSFWMHWVRQAPGQGLEWIGYINPRSGYTEYNEIFRDKATMTTDTSTSTAYMELSSLRSEDTAVYYCASFLGRGAMDYWGQGTTVTVSS"
    base = ["probe", "antibody", "--sequence", vh[:20] + "__" + vh[22:], "--threads", "1", "--device", "cpu"]
    rc, err = run([*base, "--model", "cfg.json"], capsys)
    assert rc == 2 and "error: cfg.json is not AntiBERTy's weights: give their folder" in err
    rc, err = run([*base, "--model", "~/ab"], capsys)
    assert rc == 2 and f"error: AntiBERTy weights folder not found: {Path.home() / 'ab'}" in err


def test_generate_fasta_over_the_model_it_reads(work, capsys):
    """generate's --fasta is an output: over the --model weights or their config it is refused even with --force
    (the FASTA replaced the weights)."""
    repo = Path(__file__).resolve().parent.parent
    for suffix in (".safetensors", ".json"):
        (work / f"m{suffix}").write_bytes((repo / "assets" / f"protein_mdm{suffix}").read_bytes())
    before = (work / "m.safetensors").read_bytes()
    for target, what in (("m.safetensors", "is the --model file"), ("m.json", "is the config of the --model weights")):
        rc, err = run(["generate", "protein", "--length", "10", "--n", "1", "--model", "m.safetensors", "--fasta",
                       target, "--force", "--threads", "1", "--device", "cpu"], capsys)
        assert rc == 2 and f"error: --fasta {target} {what} this command reads" in err
    assert (work / "m.safetensors").read_bytes() == before


def test_sweep_plot_paths(work, capsys):
    """mi_lens_app.sweep_plot: OUT over its ROWS file is refused even with --force (the HTML replaced the rows), a
    named pipe as ROWS is named (the read waited on it), and a quoted '~' is the home folder."""
    from mi_lens_app.sweep_plot import main as plot_main

    repo = Path(__file__).resolve().parent.parent
    rows = work / "rows.json"
    rows.write_bytes((repo / "assets" / "benchmarks" / SWEEP).read_bytes())
    before = rows.read_bytes()
    assert plot_main(["rows.json", "rows.json", "--force"]) == 2
    assert "error: out rows.json is the rows file this command reads" in capsys.readouterr().err
    assert plot_main(["rows.json", "rows.json"]) == 2  # not "pass --force", which is refused as well
    assert "error: out rows.json is the rows file this command reads" in capsys.readouterr().err
    assert plot_main(["rows.json", "new/../rows.json", "--force"]) == 2  # no folder 'new': it wrote over the rows
    assert "is the rows file this command reads" in capsys.readouterr().err and not (work / "new").exists()
    assert rows.read_bytes() == before
    os.mkfifo(work / "pipe.json")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("sweep_plot read a pipe for 30 s")))
    signal.alarm(30)
    try:
        assert plot_main(["pipe.json", "p.html"]) == 2
    finally:
        signal.alarm(0)
    assert "error: pipe.json is not a regular file" in capsys.readouterr().err
    assert plot_main(["rows.json", "~/p.html"]) == 0 and (Path.home() / "p.html").is_file()
    assert plot_main(["rows.json", "p.png"]) == 2 and not (work / "p.png").exists()  # it wrote an HTML page there
    assert "error: out p.png: the plot is an HTML page; give a file name ending in .html" in capsys.readouterr().err


def test_sweep_plot_draws_an_antibody_sweep(work, capsys):
    """sweep antibody's rows score "recovery": sweep_plot said they held no sweep rows (a JSON list of rows with
    sampler, params, n, mean_passes), which they do."""
    from mi_lens_app.sweep_plot import main as plot_main

    rows = [{"set": "ab_cdr3", "sampler": s, "params": p, "n": 2, "recovery": r, "mean_passes": x}
            for s, p, r, x in (("topk", {"k": 3}, 0.5, 3.0), ("mi", {"gamma": 8.0}, 0.55, 2.0))]
    (work / "ab.json").write_text(json.dumps(rows))
    assert plot_main(["ab.json", "ab.html"]) == 0, capsys.readouterr().err
    assert "native residues recovered (%)" in (work / "ab.html").read_text()


def test_sweep_plot_names_a_file_that_is_not_a_sweeps_json(work, capsys):
    """sweep_plot given a stopped sweep's .partial (JSON lines) said only json's "Extra data: line 2 column 1 (char
    385)": the file is named with what it is (a .partial record, JSON lines, cut short, empty, not text) and what
    the command reads."""
    from types import SimpleNamespace

    from mi_core.bench.report import Kept
    from mi_lens_app.sweep_plot import main as plot_main

    Kept(SimpleNamespace(json=work / "s.json", resume=False), "sweep", {"grid": ["topk:k=2"]}, "cells").keep(
        {"topk k=2": {"sampler": "topk", "n": 1}, "topk k=3": {"sampler": "topk", "n": 1}})  # as a stopped sweep
    (work / "lines.json").write_text('{"sampler": "topk"}\n{"sampler": "mi"}\n')
    (work / "cut.json").write_text('[{"sampler":\n')
    (work / "empty.json").write_text("")
    (work / "bytes.json").write_bytes(b"\xff\xfe[]")
    expect = {"s.json.partial": "is the .partial record a stopped sweep keeps of its finished work, not its results",
              "lines.json": "holds JSON lines (2 documents, one a line), not one JSON document",
              "cut.json": "ends before its JSON does (cut short, at line 2)", "empty.json": "is empty",
              "bytes.json": "is not a text file (byte 1 is not UTF-8)"}
    for name, what in expect.items():
        assert plot_main([name, "p.html"]) == 2
        assert capsys.readouterr().err.startswith(f"error: {name} {what}: give a sweep's --json file, a JSON list")
    assert not (work / "p.html").exists()


def test_an_output_named_as_a_folder_or_a_pipe(work, capsys):
    """'--json runs/' wrote a file named runs (Path drops the slash); a --json or --markdown naming a named pipe
    replaced the pipe with a file, even without --force."""
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "runs/"], capsys)
    assert rc == 2 and "error: --json runs/ ends in /, a folder's name; give a file name" in err
    assert not (work / "runs").exists()
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "runs"], capsys)  # the slash was one call's
    assert rc == 0 and (work / "runs").is_file(), err
    os.mkfifo(work / "pipe.md")
    os.mkfifo(work / "pipe.json")
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--json", "pipe.json", "--force"], capsys)
    assert rc == 2 and "error: --json pipe.json is not a regular file (a named pipe, socket or device)" in err
    rc, err = run(["bench-suite", "sudoku", "--markdown", "pipe.md"], capsys)
    assert rc == 2 and "pipe.md is not a regular file (a folder, named pipe or device)" in err
    assert (work / "pipe.md").is_fifo() and (work / "pipe.json").is_fifo()


def test_an_option_is_not_read_from_its_first_letters(work, capsys):
    """argparse took a prefix of a long option for the option: ``bench-order protein --seed 5`` ran as ``--seeds 5``
    (five seeds where one was meant)."""
    rc, err = run(["bench-order", "protein", "--reference", "r.fasta", "--json", "o.json", "--seed", "5"], capsys)
    assert rc == 2 and "unrecognized arguments: --seed 5; did you mean --seeds?" in err
    rc, err = run(["train-order", "sudoku", "--steps", "1"], capsys)  # ran as --steps-budget 1
    assert rc == 2 and "unrecognized arguments: --steps 1; did you mean --steps-budget?" in err
    rc, err = run(["bench", "sudoku", "--puzzle", "p.txt"], capsys)  # argparse names the missing option first
    assert rc == 2 and "required: --puzzles; --puzzle is not --puzzles: write options in full" in err
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--treads", "1"], capsys)  # a slip is named too
    assert rc == 2 and "unrecognized arguments: --treads 1; did you mean --threads?" in err


def test_a_misspelt_required_option_is_named(work, capsys):
    """``bench sudoku --puzles p.txt`` said only that --puzzles was required: argparse stops at the missing option
    before it lists the unknown ones, so the slip itself was never named."""
    rc, err = run(["bench", "sudoku", "--puzles", "p.txt"], capsys)
    assert rc == 2 and "required: --puzzles; --puzles is not an option: did you mean --puzzles? (see" in err
    rc, err = run(["estimate", "protein", "--fasta-file", "p.fa"], capsys)
    assert rc == 2 and "required: --sequence/--state; --fasta-file is not an option of this command (see" in err
    rc, err = run(["estimate", "protein", "--s", "MKT"], capsys)  # the start of both: it named --sequence alone
    assert rc == 2 and "--s is not --sequence or --state: write options in full (see" in err, err
    rc, err = run(["bench", "sudoku", "--limit", "5"], capsys)  # nothing mistyped: argparse's line alone
    assert rc == 2 and err.strip() == "error: the following arguments are required: --puzzles (see " \
        "python -m mi_core bench sudoku --help)"


def test_a_set_written_as_two_words_or_shared_by_two_parameters_is_named(work, capsys):
    """``--set gamma 0.6`` and ``--set gamma=0.6 lam=1`` were reported as an unrecognised ``0.6`` or ``lam=1``,
    with no word of --set's form."""
    (work / "p.txt").write_text(EASY + "\n")
    bench = ["bench", "sudoku", "--puzzles", "p.txt", "--sampler", "mi"]
    rc, err = run([*bench, "--set", "gamma", "0.6"], capsys)
    assert rc == 2 and "error: argument --set: expects key=value, got 'gamma' (one word: --set gamma=VALUE)" in err
    rc, err = run([*bench, "--set", "gamma=0.6", "lam=1"], capsys)
    assert rc == 2 and "unrecognized arguments: lam=1; each parameter takes its own --set: --set lam=1 (see" in err
    rc, err = run(["generate", "protein", "--length", "5", "--sampler", "mi", "--set", "gamma", "8"], capsys)
    assert rc == 2 and "argument --set: expects key=value, got 'gamma' (one word: --set gamma=VALUE)" in err
    rc, err = run([*bench, "--foo", "a=b"], capsys)  # an unknown flag's value: it said "each parameter takes its own
    assert rc == 2 and "unrecognized arguments: --foo a=b (see" in err, err  # --set: --set a=b"
    rc, err = run([*bench, "--set="], capsys)  # empty: no key to write as one word (it said "--set =VALUE")
    assert rc == 2 and "error: argument --set: expects key=value, got '' (see" in err, err


def test_a_misspelt_command_is_named(work, capsys):
    """``benchh sudoku`` listed all fifteen commands without saying which one was meant, as options do."""
    rc, err = run(["benchh", "sudoku"], capsys)
    assert rc == 2 and err.startswith("error: unknown command 'benchh' (did you mean bench?); choose one of train, ")
    rc, err = run(["frobnicate"], capsys)
    assert rc == 2 and err.startswith("error: unknown command 'frobnicate'; choose one of train, ")


def test_a_sampler_parameter_written_as_an_option_points_to_set(work, capsys):
    """``bench brackets --selector X`` and ``--sampler learned:steps=5`` (sweep's spec form) said only that the
    option or the sampler was unknown; a sampler's parameters go in ``--set``."""
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--selector", "s.safetensors"], capsys)
    assert rc == 2 and "--selector s.safetensors; a sampler's parameter goes in --set selector=... (see" in err
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--no-such", "1"], capsys)
    assert rc == 2 and "unrecognized arguments: --no-such 1 (see" in err
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--sampler", "learned:steps=5"], capsys)
    assert rc == 2 and "unknown sampler 'learned:steps=5' (parameters go in --set, one value each: --sampler learned " \
        "--set steps=5)" in err


def test_a_sampler_spec_of_several_parameters_or_values_points_to_a_command_that_runs(work, capsys):
    """``--sampler mi:gamma=0.1;lam=1`` was pointed to ``--set gamma=0.1`` alone, lam dropped, and
    ``mi:gamma=0.1,0.3`` to ``--set gamma=0.1,0.3``, which --set refuses (not a valid float): each parameter gets
    its --set, and a list of values is named a grid, sweep's."""
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--sampler", "mi:gamma=0.1;lam=1"], capsys)
    assert rc == 2 and "--sampler mi --set gamma=0.1 --set lam=1)" in err
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--sampler", "mi:gamma=0.1,0.3"], capsys)
    assert rc == 2 and "--set gamma=0.1,0.3; a list of values is a grid: python -m mi_core sweep runs it)" in err


def test_no_option_is_offered_for_the_values_after_a_double_dash(work, capsys):
    """After ``--`` every argument is a value: ``--`` itself began every option, so the hint offered the first three
    (``did you mean --help or --puzzle or --state?``), and an option written after it is not one to correct."""
    rc, err = run(["estimate", "sudoku", "--puzzle", EASY, "--", "--json", "o.json"], capsys)
    assert rc == 2 and "unrecognized arguments: -- --json o.json (see" in err


def test_markdown_dash_is_standard_output(work, model_path, capsys):
    """--markdown - (bench-order's standard output) wrote a file named '-' into the working folder from diagnose,
    bench-suite, eval-estimator and bench-probe, and sweep wrote its table nowhere."""
    (work / "p.txt").write_text(EASY + "\n")
    common = ["--puzzles", "p.txt", "--limit", "1", "--model", str(model_path), "--device", "cpu", "--threads", "1"]
    for argv, heading in ((["sweep", "sudoku", *common, "--grid", "topk:k=8", "--json", "s.json"], "### Sweep: p"),
                          (["diagnose", "sudoku", *common, "--sampler", "topk:k=8", "--json", "d.json"], "| sampler |")):
        main([*argv, "--markdown", "-"])
        out = capsys.readouterr().out
        assert heading in out and "<!--" not in out, out
        assert not (work / "-").exists()


@pytest.mark.parametrize("argv", [["estimate", "sudoku", "--puzzle", EASY, "--json", "-"],
                                  ["generate", "protein", "--length", "5", "--fasta", "-"],
                                  ["sweep", "sudoku", "--puzzles", "p.txt", "--grid", "topk:k=8", "--json", "-"]])
def test_an_output_of_dash_is_refused(work, capsys, argv):
    """--json - / --fasta - wrote a file named '-' into the working folder (only --markdown takes -, standard
    output), and the next run said '--json - already exists'."""
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(argv, capsys)
    assert rc == 2 and f"error: {argv[-2]} -: name a file or folder" in err and not (work / "-").exists()


def test_a_folder_named_as_the_domain_is_no_input_folder(work):
    """A plugin's package folder is often named as its domain key (``brackets/``): an output inside it, given with
    --force, was refused as 'a file in the --domain folder', though no path option names that folder."""
    from argparse import Namespace

    from mi_core.cli import overwrites_input

    (work / "brackets").mkdir()
    (work / "brackets" / "r.json").write_text("{}\n")
    (work / "data").mkdir()
    (work / "data" / "shard.json").write_text("{}\n")
    typed = Namespace(domain="brackets", sampler="brackets", json=Path("brackets/r.json"), force=True)
    assert overwrites_input(typed) is None
    read = Namespace(domain="brackets", data=Path("data"), json=Path("data/shard.json"), force=True)
    assert "is a file in the --data folder data" in overwrites_input(read)


def copy_asset(name: str, to: Path) -> Path:
    """The shipped ``assets/NAME.safetensors`` (and its JSON) copied to ``to`` (a path without its suffix)."""
    repo = Path(__file__).resolve().parent.parent
    to.parent.mkdir(parents=True, exist_ok=True)
    for suffix in (".safetensors", ".json"):
        to.with_suffix(suffix).write_bytes((repo / "assets" / f"{name}{suffix}").read_bytes())
    return to.with_suffix(".safetensors")


def test_a_variables_relative_path_is_read_from_the_working_folder(work, capsys, monkeypatch):
    """MI_LENS_SUDOKU_MODEL=my_models/x.safetensors set in a working folder of one's own: the command's --model
    default read it there, but the loader (the app's) and the shipped selector looked in the MI Lens checkout."""
    from mi_core.domain import get_domain
    from mi_core.domains.protein.model import default_mdm_path
    from mi_core.models.loading import load_model

    repo = Path(__file__).resolve().parent.parent
    copy_asset("sudoku_peer_recurrent", work / "my_models" / "x")
    copy_asset("sudoku_order_selector_recurrent", work / "my_models" / "sel")
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", "my_models/x.safetensors")
    monkeypatch.setenv("MI_LENS_SUDOKU_SELECTOR", "my_models/sel.safetensors")
    monkeypatch.delenv("MI_LENS_SUDOKU_ESTIMATOR", raising=False)
    domain = get_domain("sudoku")
    assert domain.model_path() == domain.stamp_paths()[0] == work / "my_models" / "x.safetensors"
    assert domain.selector_path() == work / "my_models" / "sel.safetensors"
    assert domain.default_file("model") == "my_models/x.safetensors"  # the command's option names it as typed
    assert domain.estimator_path() == repo / "assets" / "sudoku_mi_estimator_recurrent.safetensors"  # shipped
    assert load_model(domain="sudoku").domain == domain.key
    (work / "p.txt").write_text(EASY + "\n")
    rc, err = run(["bench", "sudoku", "--puzzles", "p.txt", "--limit", "1", "--threads", "1", "--device", "cpu",
                   "--sampler", "learned", "--set", "steps=5", "--json", "r.json"], capsys)
    assert rc == 0, err
    result = json.loads((work / "r.json").read_text())
    assert result["model"] == "my_models/x.safetensors"
    assert result["selector"] == str(work / "my_models" / "sel.safetensors")
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", "my_models/p.safetensors")
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", "esmc")
    assert default_mdm_path() == work / "my_models" / "p.safetensors"
    assert get_domain("protein").stamp_paths()[-1] == work / "esmc"


def test_a_variables_missing_file_is_named_where_it_was_looked_for(work, capsys, monkeypatch):
    from mi_core.models.base import ModelFileError
    from mi_core.models.loading import load_model

    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", "my_models/nope.safetensors")
    looked = work / "my_models" / "nope.safetensors"
    with pytest.raises(ModelFileError, match=f"not found: {looked} \\(the file \\$MI_LENS_SUDOKU_MODEL names\\)"):
        load_model(domain="sudoku")
    rc, err = run(["probe", "sudoku", "--puzzle", EASY, "--threads", "1", "--device", "cpu"], capsys)
    assert rc == 2 and "not found: my_models/nope.safetensors (the file $MI_LENS_SUDOKU_MODEL names)" in err, err


def test_a_variables_home_path_without_a_home_is_left_as_written(monkeypatch):
    """``~/x`` where no home folder can be found (HOME unset, no passwd entry) raised RuntimeError from expanduser."""
    from pathlib import Path

    from mi_core.domain import env_file

    def no_home(self):
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "expanduser", no_home)
    monkeypatch.setenv("MI_LENS_TEST_MODEL", "~/x.safetensors")
    assert env_file("MI_LENS_TEST_MODEL") == "~/x.safetensors"


def test_a_model_variable_naming_no_keyword_of_its_domain_is_a_file(tmp_path, monkeypatch, capsys):
    """``MI_LENS_SUDOKU_MODEL=mymodel`` (a file with no dot or slash in its name) was taken for a keyword, which the
    Sudoku domain takes none of, and the shipped model was used without a word; a domain's own keywords stay
    keywords (protein's ``esmc``, antibody's default ``auto``)."""
    from mi_core.cli import main as cli_main
    from mi_core.domain import get_domain

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MI_LENS_SUDOKU_MODEL", "mymodel")
    sudoku = get_domain("sudoku")
    assert sudoku.model_spec() == str(tmp_path / "mymodel") and sudoku.default_file() == "mymodel"
    assert cli_main(["probe", "sudoku", "--puzzle", "0" * 81, "--threads", "1"]) == 2
    assert "weights file not found: mymodel (the file $MI_LENS_SUDOKU_MODEL names)" in capsys.readouterr().err
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", "esmc")
    monkeypatch.setenv("MI_LENS_ANTIBODY_MODEL", "auto")
    assert get_domain("protein").model_spec() == "esmc" and get_domain("antibody").model_spec() == "auto"
