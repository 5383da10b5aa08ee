"""The command-line contract: every bad input in ``tests/cli_cases.py`` (each case of the bad-input audit in
docs/reliability.md, and more) ends with exit status 2 and exactly one ``error:`` line, never a traceback;
``train --help`` exits 0.

Most cases run in-process through :func:`mi_core.cli.main` (fast); a few through ``python -m mi_core`` in
a subprocess, the way a user meets them.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_cases import cases, env_cases, fill, make_inputs

from mi_core.cli import main

REPO = Path(__file__).resolve().parent.parent
CASES = cases()


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    return make_inputs(tmp_path_factory.mktemp("contract"), REPO)


def check(rc: int, out: str, err: str, group: str) -> None:
    assert "Traceback" not in out + err
    if group == "help":
        assert rc == 0 and "usage" in out
        return
    error_lines = [line for line in (out + err).splitlines() if "error:" in line]
    assert rc == 2, f"exit {rc}; stderr: {err[-500:]}"
    assert len(error_lines) == 1, error_lines
    assert error_lines[0].startswith("error: ") and err.strip().endswith(error_lines[0].strip())


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_error_line(case, places, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    _, group, argv = case
    kept = [*Path(places["D"]).glob("exists*"), *Path(places["D"]).glob("estdata/*"), *Path(places["D"]).glob("suite/*")]
    before = {p: p.read_bytes() for p in kept}
    rc = main(fill(argv, places))
    out, err = capsys.readouterr()
    check(rc, out, err, group)
    assert {p: p.read_bytes() for p in kept} == before  # nothing overwritten


@pytest.mark.parametrize("case", env_cases(), ids=[c[0] for c in env_cases()])
def test_a_bad_model_variable_is_one_error_line(case, places, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    _, env, argv, text = case
    for key, value in env.items():
        monkeypatch.setenv(key, value.replace("{D}", places["D"]))
    rc = main(fill(argv, places))
    out, err = capsys.readouterr()
    check(rc, out, err, "env")
    assert text.replace("{D}", places["D"]) in err


@pytest.mark.parametrize("name", ["bench-batch-size-zero", "sweep-merge-json-object", "generate-length-huge",
                                  "arabic-indic-digit-in-option", "train-help"])
def test_through_python_m(name, places):
    _, group, argv = next(c for c in CASES if c[0] == name)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "mi_core", *fill(argv, places)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    check(proc.returncode, proc.stdout, proc.stderr, group)


def test_messages_name_option_value_and_range(places, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    expect = {
        "bench-batch-size-negative": "--batch-size: -5 is outside the accepted range 1..65536",
        "seed-beyond-int64": f"--seed: {2**70} is outside the accepted range 0..{2**63 - 1}",
        "diagnose-limit-zero": "--limit: 0 is outside the accepted range",
        "diagnose-threads-negative": "--threads: -1 is outside the accepted range 0..1024",
        "eval-estimator-threshold-negative": "--threshold: -1.0 is outside the accepted range",
        "mask-predict-steps-huge": "steps must be at most 4096",
        "puzzles-is-a-directory": "is a directory, not a puzzle file",
        "csv-solution-contradicts-givens": "contradict.csv, line 3: the solution contradicts the givens at row",
        "puzzle-with-two-solutions": "line 1 has more than one solution",
        "protein-selector-on-sudoku": "was trained on protein, the model is one for sudoku",
        "arabic-indic-digit-in-file": "U+0669 ARABIC-INDIC DIGIT NINE",
        "fullwidth-digit-in-file": "U+FF17 FULLWIDTH DIGIT SEVEN",
        "zero-width-space-in-file": "zerowidth.txt, line 1: invisible character '\\u200b' (U+200B ZERO WIDTH SPACE) at position 6",
        "superscript-digit-in-puzzle": "U+00B2 SUPERSCRIPT TWO",
        "model-config-d-ff-huge": "config d_ff: 2000000000 is outside the accepted range 1..65536",
        "model-config-max-len-huge": "config max_len: 1000000000 is outside the accepted range",
        "weights-do-not-fit-config": "do not fit the config",
        "sweep-merge-json-object": "must hold a JSON list of sweep rows",
        "bench-json-under-file": "afile is a file, not a directory",
        "bench-json-dot": "--json . is a directory; give a file name",
        "estimate-json-in-proc": "--json /proc/x.json: cannot write in /proc",  # the path asked for, before work
        "generate-fasta-in-proc": "--fasta /proc/x.fa: cannot write in /proc",
        "bench-protein-lengths-too-long": "--lengths 10-9999: ",  # after the model loads, its length named
        "bench-order-budget-negative": "--budgets: -1 is outside the accepted range 1..4096",
        "bench-order-budget-huge": "--budgets: 5000 is outside the accepted range 1..4096",
        "train-order-steps-budget-huge": "--steps-budget 5,5000: 5000 is outside 1..4096",
        "bench-order-gamma-text": "--gammas: expects numbers separated by commas; 'x' is not one",
        "bench-order-seeds-empty-item": "--seeds: expects integers separated by commas; '0,,2' has an empty item",
        "estimate-estimator-of-another-model": "--estimator assets/sudoku_mi_estimator_hard.safetensors was trained on "
                                               "assets/sudoku_mdm_hard.safetensors, not on",
        "estimate-bad-puzzle-first": "a Sudoku has 81 cells, got 3 characters",  # before the estimator loads
        "train-out-root": "--out / is a directory; give a file name",
        "bench-json-exists": "already exists; pass --force",
        "probe-sudoku-solved": "nothing to probe: the state has no masked position",
        "estimate-sudoku-solved": "nothing to estimate: the state has no masked position",
        "mix-nan": "--mix expects three weights >= 0, not all 0 (uniform,puzzle,decode), got '1,nan,1'",
        "sweep-markdown-into-json": "a Markdown report file ends in .md",
        "set-twice": "--set gives k twice (2 and 3): give it once",
        "mix-negative": "--mix expects three weights >= 0, not all 0 (uniform,puzzle,decode), got '-1,1,1'",
        "train-pool-file-empty": "empty.txt is not a gzip pool file",
        "generate-length-beyond-model": "--length 5000 is longer than the 256 residues",
        "estimate-protein-estimator-on-sudoku": "is an estimator of protein, not sudoku",
        "bench-model-is-directory": "is a directory, not a weights file",
        "train-estimator-variants-empty": "argument --variants: a variant is LOSS:bound or LOSS:free",  # not the defaults
        "train-estimator-variants-trailing-comma": "with LOSS in mse, sqrt, log; got ''",
        # the second audit: each refused for its own reason, not an earlier one
        "diagnose-markdown-lone-start": "lone.md: its section 'ab' has 1 marker (start) where it needs two, its start and then its end",
        "sweep-markdown-reversed-markers": "its section 'sweep-p' has 2 markers (end, start) where it needs two",
        "diagnose-section-ends-the-comment": "argument --section: a section name holds no '--'",
        "sweep-json-is-the-markdown": "--json and --markdown name the same file",
        "train-pool-dir-a-file": "--pool-dir",
        "train-pool-dir-in-proc": "--pool-dir /proc/pools: cannot write in /proc",
        "train-config-beside-out-exists": "exists_cfg.json, which this run writes beside it, already exists",
        "train-checkpoint-beside-out-exists": "exists_run.ckpt, which this run writes beside it, already exists",
        "train-out-ckpt": "c.ckpt: a weights file ends in .safetensors",
        "train-out-json": "w.json: a weights file ends in .safetensors",
        "train-estimator-out-json": "w.json: a weights file ends in .safetensors",
        "train-estimator-no-out": "no estimator data at",
        "train-order-posterior-beside-out-exists": "exists_sel_posterior.json, which this run writes beside it",
        "train-order-init-of-another-domain": "is a selector trained on protein, not sudoku",
        "probe-json-is-the-model": "exists_model.safetensors is the --model file this command reads",
        "estimate-json-is-the-estimators-config": "is the config of the --estimator weights this command reads",
        "eval-estimator-of-another-model": "give --estimator trained on this model, or --transfer",
        "train-box-2": "--box 2: train sudoku trains 9x9 grids",
        "train-val-file-empty": "empty_pool.txt.gz holds no puzzles",
        "train-distill-without-teacher": "--distill needs --teacher",
        "estimate-sudoku-estimator-on-protein": "is an estimator of sudoku, not protein",
        "train-estimator-manifest-not-json": "manifest.json is not valid JSON",
        "eval-estimator-4x4-puzzles": "four.txt: the puzzle on line 1 has 16 cells, not the 81",
        "diagnose-sampler-key-twice": "--sampler 'topk:k=2;k=3' gives k twice: give it once",  # not "a sweep grid"
        "diagnose-unknown-sampler": "unknown sampler 'foo' in --sampler 'foo'",  # it said "in grid 'foo'"
        "diagnose-sampler-twice": "--sampler topk:k=2 is given twice",  # it ran twice
        "markdown-and-no-markdown": "--markdown FILE writes a section and --no-markdown writes none",
        "blank-mask-positions": "--mask-positions: no position in ' , '",  # it masked nothing, silently
        "estimate-mask-positions-outside": "--mask-positions: '9' is outside 1-8 (the sequence has 8 residues)",
        "make-estimator-data-out-empty": "argument --out: an empty path ('')",
        "bench-model-empty": "argument --model: an empty path ('')",
        "probe-protein-junk-pth": "junk.pth is not an ESM-C state dict (torch.load: ",
        "probe-sudoku-eps-one": "argument --eps: 1 would skip every value",  # was "eps must be ..." after loading
        "bench-suite-data-a-file": "ref.fa: not a folder; give the folder of kaggle_graded_dev.csv",
        "bench-suite-data-missing-set": "has no kaggle_graded_dev.csv, top1465.txt, clue17_dev.txt",
        "train-estimator-out-is-a-shard": "--out {D}/estdata/shard_00000.safetensors is a file in the --data folder "
                                          "{D}/estdata this command reads: write its output elsewhere",
        "train-estimator-config-beside-out-is-the-manifest": "--out {D}/estdata/manifest.safetensors would replace "
                                                             "manifest.json beside it, a file in the --data folder",
        "bench-model-empty-file": "cannot read weights {D}/empty_w.safetensors: the file is empty (0 bytes)",
        "bench-model-cut-short": "half_w.safetensors: not a whole safetensors file (cut short, or a file of another "
                                 "format) (Error while deserializing header",  # safetensors' words alone
        "bench-model-json-named-safetensors": "json_w.safetensors: not a whole safetensors file",
        "bench-suite-json-over-its-data": "--json {D}/suite/top1465.txt is a file in the --data folder {D}/suite",
        # the fifth sweep: the option typed leads a config's or a sampler's check, which names its field
        "train-n-heads-not-dividing": "error: --d-model 16, --n-heads 3: d_model 16 is not divisible by n_heads 3",
        "train-fractions-over-one": "error: --puzzle-frac 0.8, --onpolicy-frac 0.5: puzzle_frac + onpolicy_frac must be",
        "train-attention-unknown": "argument --attention: invalid choice: 'foo'",
        "bench-set-gamma-negative": "error: --set gamma=-1: gamma must be a finite number >= 0, got -1.0",
        "sweep-grid-k-zero": "error: --grid topk:k=1,0 (its point topk k=0): k must be >= 1, got 0",
        "diagnose-sampler-k-zero": "error: --sampler topk:k=0: k must be >= 1, got 0",
        "bench-order-antibody-rows-reversed": "--rows 90-80: the range runs backwards; give the first row first "
                                              "(--rows 80-90)",  # it said the form, A-B
        "generate-antibody-length-75": "--length 75: the antibody domain generates from all-masked sequences of 82-151 "
                                       "residues only",  # a W-G-x-G motif missing from a template never written
        "sweep-merge-json-lines": "--merge: {D}/lines.json holds JSON lines (2 documents, one a line), not one JSON",
    }
    for name, text in expect.items():
        _, _, argv = next(c for c in CASES if c[0] == name)
        assert main(fill(argv, places)) == 2
        err = capsys.readouterr().err
        assert text.replace("{D}", places["D"]) in err, (name, err)


def test_generate_refuses_a_length_before_the_model_loads(monkeypatch, capsys):
    """``generate antibody --length 75`` loaded AntiBERTy, then said no W-G-x-G motif followed the second cysteine
    of a template the user never wrote; the lengths an all-masked chain takes are said before any model loads."""
    import mi_core.commands.generate as generate

    def no_load(*args, **kwargs):
        raise AssertionError("the model loaded before --length was checked")

    monkeypatch.setattr(generate, "load_model_described", no_load)
    for length in ("50", "75", "600"):
        assert main(["generate", "antibody", "--length", length, "--threads", "1", "--device", "cpu"]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: --length {length}: the antibody domain generates from all-masked sequences of 82-151 "
                       "residues only; give one of those lengths, or a --template to fill\n"), err
    assert generate.lengths_text([8, 10, 12, 14, 16]) == "8, 10, 12, 14 or 16"
    assert generate.lengths_text([3, 4, 5, 9, *range(20, 1025)]) == "3-5, 9 or 20 or more"
