"""The table of bad command lines behind ``tests/test_cli_contract.py`` and ``scripts/studies/cli_contract_count.py``.

Each case is ``(id, group, argv)``: every one must end with exit status 2 and exactly one ``error:`` line on
stderr, never a traceback, except the ``help`` group, which must exit 0. ``make_inputs(folder)`` writes the
files the cases name (puzzle files, a file standing where a folder should be, models whose JSON config does
not fit their weights, ...); paths of shipped assets are relative to the repository root, the cases' working
folder. Every case is cheap in a fixed build: it is refused before any model pass.
"""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

EASY = "..9.7.1.....2.8...2...3...4.9.........8....311.6...52.....6327.....9.6...1...7.5."
EASY_SOL = "349675182761248395285931764597312846428756931136489527954163278872594613613827459"
# the first 30 cells of EASY only: many solutions
MULTI = EASY[:30] + "." * 51
ORACLE = "1..4..1...4...3."  # a 4x4 state


def make_inputs(d: Path, repo: Path) -> dict[str, str]:
    """Write the inputs into folder ``d`` and return the placeholders of :func:`cases`."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "p.txt").write_text(EASY + "\n")
    (d / "afile").write_text("not a folder\n")
    (d / "empty.txt").write_text("# nothing\n")
    given = next(i for i, ch in enumerate(EASY) if ch != ".")  # the solution changes this given digit
    bad = list(EASY_SOL)
    bad[given] = str(int(EASY_SOL[given]) % 9 + 1)
    (d / "contradict.csv").write_text(f"# a comment line\npuzzle,solution\n{EASY},{''.join(bad)}\n")
    (d / "multi.txt").write_text(MULTI + "\n")
    (d / "arabic.txt").write_text(EASY.replace("9", "\u0669", 1) + "\n")
    (d / "fullwidth.txt").write_text(EASY.replace("7", "\uff17", 1) + "\n")
    (d / "zerowidth.txt").write_text(EASY[:5] + "\u200b" + EASY[5:] + "\n")
    (d / "folder").mkdir(exist_ok=True)
    (d / "obj.json").write_text(json.dumps({"rows": []}) + "\n")
    (d / "exists.json").write_text("{}\n")
    (d / "exists.fa").write_text(">x\nMK\n")
    (d / "exists.safetensors").write_text("keep me\n")
    (d / "ref.fa").write_text(">a\nMKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQ\n>b\nGSHMLEDPVAGKTWLAKLLEERLGLIEVQAPIL\n")
    # report files whose section markers a rewrite would cut through; files a run would write beside its output
    (d / "lone.md").write_text("# Notes\n<!-- ab:start -->\nold\n## My own text\n")
    (d / "reversed.md").write_text("<!-- sweep-p:end -->\nmine\n<!-- sweep-p:start -->\n")
    with gzip.open(d / "empty_pool.txt.gz", "wt") as pool:  # a pool file of no puzzles
        pool.write("")
    (d / "badmanifest").mkdir(exist_ok=True)
    (d / "badmanifest" / "manifest.json").write_text('{"config": \x01}')
    (d / "four.txt").write_text(ORACLE + "\n")
    (d / "junk.pth").write_bytes(bytes(range(256)) * 8)
    (d / "exists_cfg.json").write_text("{}\n")
    (d / "exists_run.ckpt").write_text("a checkpoint to resume\n")
    (d / "exists_sel_posterior.json").write_text("{}\n")
    (d / "estdata").mkdir(exist_ok=True)  # an estimator's data folder: --out --force must not replace its files
    (d / "estdata" / "manifest.json").write_text("{}\n")
    (d / "estdata" / "shard_00000.safetensors").write_text("a shard\n")
    (d / "suite").mkdir(exist_ok=True)  # bench-suite's --data folder
    (d / "suite" / "top1465.txt").write_text(EASY + "\n")
    (d / "lines.json").write_text('{"sampler": "topk"}\n{"sampler": "mi"}\n')  # JSON lines, not a sweep's list
    (d / "ab.csv").write_text(f"name,vh\nab1,{VH}\nab2,{VH}\n")  # two antibodies
    for name, src in (("exists_model", "sudoku_mdm"), ("exists_est", "sudoku_mi_estimator")):
        shutil.copy(repo / "assets" / f"{src}.safetensors", d / f"{name}.safetensors")
        shutil.copy(repo / "assets" / f"{src}.json", d / f"{name}.json")
    # weights files safetensors cannot read: empty, cut short, a JSON file under the name (each with its config)
    weights = (repo / "assets" / "sudoku_mdm.safetensors").read_bytes()
    for name, data in (("empty_w", b""), ("half_w", weights[: len(weights) // 2]), ("json_w", b'{"a": 1}\n')):
        (d / f"{name}.safetensors").write_bytes(data)
        shutil.copy(repo / "assets" / "sudoku_mdm.json", d / f"{name}.json")
    # models whose JSON config does not fit the weights
    for name, src, key, value in [("dff", "sudoku_mdm", "d_ff", 2_000_000_000),
                                  ("maxlen", "protein_mdm", "max_len", 1_000_000_000),
                                  ("dmodel", "sudoku_mdm", "d_model", 64)]:
        shutil.copy(repo / "assets" / f"{src}.safetensors", d / f"{name}.safetensors")
        meta = json.loads((repo / "assets" / f"{src}.json").read_text())
        meta["config"][key] = value
        (d / f"{name}.json").write_text(json.dumps(meta))
    return {"D": str(d)}


def cases() -> list[tuple[str, str, list[str]]]:
    """``(id, group, argv)`` with ``{D}`` for the folder of :func:`make_inputs`."""
    P, M = "{D}/p.txt", "assets/sudoku_mdm.safetensors"
    bench = ["bench", "sudoku", "--puzzles", P, "--model", M, "--device", "cpu"]
    sweep = ["sweep", "sudoku", "--puzzles", P, "--grid", "sequential", "--model", M, "--device", "cpu"]
    diag = ["diagnose", "sudoku", "--puzzles", P, "--sampler", "topk:k=2", "--model", M]
    gen = ["generate", "protein", "--device", "cpu", "--model", "mdm"]
    pprot = ["probe", "protein", "--model", "mdm", "--device", "cpu", "--no-progress"]
    evals = ["eval-estimator", "sudoku", "--puzzles", P, "--states", "1", "--no-markdown", "--device", "cpu"]
    tiny_train = ["--steps", "1", "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "16",
                  "--grid-pool", "10", "--puzzle-pool", "10", "--eval-every", "1", "--eval-puzzles", "1"]
    return [
        # tracebacks in the audit: an output path under a file
        ("bench-json-under-file", "traceback", [*bench, "--json", "{D}/afile/out.json"]),
        ("bench-json-dot", "traceback", [*bench, "--json", "."]),
        ("estimate-bad-puzzle-first", "unclear", ["estimate", "sudoku", "--puzzle", "12x", "--estimator",
                                                "{D}/none.safetensors"]),
        ("train-out-root", "traceback", ["train", "sudoku", "--out", "/", *tiny_train]),
        ("generate-fasta-under-file", "traceback", [*gen, "--length", "20", "--n", "1", "--fasta", "{D}/afile/g.fa"]),
        ("probe-oracle4-json-under-file", "traceback", ["probe", "oracle4", "--puzzle", ORACLE, "--no-progress",
                                                         "--device", "cpu", "--json", "{D}/afile/o.json"]),
        ("probe-protein-json-under-file", "traceback", [*pprot, "--sequence", "MK_LV", "--json", "{D}/afile/o.json"]),
        ("estimate-sudoku-json-under-file", "traceback", ["estimate", "sudoku", "--puzzle", EASY, "--device", "cpu",
                                                           "--json", "{D}/afile/o.json"]),
        ("diagnose-json-under-file", "traceback", [*diag, "--json", "{D}/afile/d.json"]),
        ("sweep-json-under-file", "traceback", [*sweep, "--json", "{D}/afile/s.json"]),
        ("bench-batch-size-negative", "traceback", [*bench, "--batch-size", "-5"]),
        ("bench-batch-size-zero", "traceback", [*bench, "--batch-size", "0"]),
        ("diagnose-threads-negative", "traceback", [*diag, "--threads", "-1", "--json", "{D}/d1.json"]),
        ("sweep-merge-json-object", "traceback", [*sweep, "--json", "{D}/obj.json", "--merge"]),
        ("generate-length-huge", "traceback", [*gen, "--length", "1000000000", "--n", "1"]),
        ("generate-n-huge", "traceback", [*gen, "--length", "10", "--n", "100000000"]),
        ("model-config-d-ff-huge", "traceback", [*bench[:4], "--model", "{D}/dff.safetensors"]),
        ("model-config-max-len-huge", "traceback", [*gen[:4], "--model", "{D}/maxlen.safetensors", "--length", "10"]),
        # hangs in the audit
        ("sweep-limit-zero", "hang", [*sweep, "--limit", "0", "--json", "{D}/s0.json"]),
        ("sweep-limit-negative", "hang", [*sweep, "--limit", "-1", "--json", "{D}/s1.json"]),
        ("diagnose-limit-zero", "hang", [*diag, "--limit", "0", "--json", "{D}/d2.json"]),
        ("diagnose-limit-negative", "hang", [*diag, "--limit", "-1", "--json", "{D}/d3.json"]),
        ("mask-predict-steps-huge", "hang", [*bench, "--sampler", "mask_predict", "--set", "steps=100000000"]),
        ("topk-k-huge", "hang", [*bench, "--sampler", "topk", "--set", "k=1000000000"]),
        # accepted in the audit
        ("csv-solution-contradicts-givens", "accepted", [*bench[:2], "--puzzles", "{D}/contradict.csv", *bench[4:]]),
        ("puzzle-with-two-solutions", "accepted", [*bench[:2], "--puzzles", "{D}/multi.txt", *bench[4:]]),
        ("protein-selector-on-sudoku", "accepted", [*bench, "--sampler", "learned",
                                                    "--set", "selector=assets/protein_order_selector.safetensors"]),
        ("protein-estimator-on-sudoku", "accepted", [*bench, "--sampler", "mi",
                                                     "--set", "estimator=assets/protein_mi_estimator.safetensors"]),
        ("eval-estimator-threshold-negative", "accepted", [*evals, "--threshold", "-1"]),
        ("arabic-indic-digit-in-file", "accepted", [*bench[:2], "--puzzles", "{D}/arabic.txt", *bench[4:]]),
        ("fullwidth-digit-in-file", "accepted", [*bench[:2], "--puzzles", "{D}/fullwidth.txt", *bench[4:]]),
        ("zero-width-space-in-file", "accepted", [*bench[:2], "--puzzles", "{D}/zerowidth.txt", *bench[4:]]),
        ("superscript-digit-in-puzzle", "accepted", ["probe", "oracle4", "--puzzle", "\u00b2" + ORACLE[1:],
                                                     "--no-progress", "--device", "cpu"]),
        ("arabic-indic-digit-in-option", "accepted", [*bench, "--limit", "\u0663"]),
        ("fullwidth-digit-in-set", "accepted", [*bench, "--sampler", "topk", "--set", "k=\uff14"]),
        ("arabic-indic-digit-in-mask-range", "accepted", [*pprot, "--sequence", "MKTAYIAK", "--mask-positions",
                                                          "\u0662-4"]),
        ("sharp-s-in-protein", "accepted", [*pprot, "--sequence", "MK\u00dfA_"]),
        ("blank-mask-positions", "accepted", [*pprot, "--sequence", "MK_AYIAK", "--mask-positions", " , "]),
        ("estimate-mask-positions-outside", "accepted", ["estimate", "protein", "--sequence", "MKTAYIAK",
                                                         "--mask-positions", "9", "--device", "cpu"]),
        # unclear messages in the audit
        ("seed-beyond-int64", "unclear", [*bench, "--seed", str(2**70)]),
        ("puzzles-is-a-directory", "unclear", [*bench[:2], "--puzzles", "{D}/folder", *bench[4:]]),
        ("weights-do-not-fit-config", "unclear", [*bench[:4], "--model", "{D}/dmodel.safetensors"]),
        # data safety: an existing output needs --force
        ("train-sudoku-out-exists", "safety", ["train", "sudoku", "--out", "{D}/exists.safetensors", "--device", "cpu",
                                               *tiny_train]),
        ("bench-json-exists", "safety", [*bench, "--json", "{D}/exists.json"]),
        ("generate-fasta-exists", "safety", [*gen, "--length", "10", "--n", "1", "--fasta", "{D}/exists.fa"]),
        ("probe-json-exists", "safety", ["probe", "oracle4", "--puzzle", ORACLE, "--no-progress", "--device", "cpu",
                                         "--json", "{D}/exists.json"]),
        ("sweep-json-exists", "safety", [*sweep, "--json", "{D}/exists.json"]),
        ("json-is-a-directory", "safety", [*bench, "--json", "{D}/folder"]),
        # an output folder nothing can be written in: refused before the work (it failed after, naming x.json.tmp)
        ("estimate-json-in-proc", "safety", ["estimate", "sudoku", "--puzzle", EASY, "--device", "cpu",
                                             "--json", "/proc/x.json"]),
        ("generate-fasta-in-proc", "safety", [*gen, "--length", "10", "--n", "1", "--fasta", "/proc/x.fa"]),
        # every numeric option has a range
        ("bench-limit-zero", "range", [*bench, "--limit", "0"]),
        ("bench-order-budget-negative", "range", ["bench-order", "sudoku", "--puzzles", P, "--budgets", "5,-1",
                                                  "--json", "{D}/bo.json"]),
        ("bench-order-budgets-empty", "range", ["bench-order", "sudoku", "--puzzles", P, "--budgets", ",",
                                                "--json", "{D}/bo.json"]),
        ("bench-order-seeds-empty-item", "range", ["bench-order", "protein", "--seeds", "0,,2",
                                                   "--json", "{D}/bo.json"]),
        ("bench-order-gamma-text", "range", ["bench-order", "sudoku", "--puzzles", P, "--gammas", "0.5,x",
                                             "--json", "{D}/bo.json"]),
        ("bench-temperature-negative", "range", [*bench, "--temperature", "-1"]),
        ("bench-temperature-nan", "range", [*bench, "--temperature", "nan"]),
        ("bench-seed-negative", "range", [*bench, "--seed", "-1"]),
        ("generate-temperature-inf", "range", [*gen, "--length", "10", "--temperature", "inf"]),
        ("generate-n-zero", "range", [*gen, "--length", "10", "--n", "0"]),
        ("generate-length-beyond-model", "range", [*gen, "--length", "5000", "--n", "1"]),
        ("probe-sudoku-eps-negative", "range", ["probe", "sudoku", "--puzzle", EASY, "--eps", "-1", "--no-progress"]),
        ("probe-sudoku-eps-one", "range", ["probe", "sudoku", "--puzzle", EASY, "--eps", "1", "--no-progress"]),
        ("bench-suite-data-a-file", "other", ["bench-suite", "sudoku", "--data", "{D}/ref.fa", "--json", "{D}/su.json"]),
        ("bench-suite-data-missing-set", "other", ["bench-suite", "sudoku", "--data", "{D}", "--json", "{D}/su.json"]),
        ("probe-sudoku-max-batch-zero", "range", ["probe", "sudoku", "--puzzle", EASY, "--max-batch", "0",
                                                  "--no-progress"]),
        ("probe-protein-mask-rate-two", "range", [*pprot, "--sequence", "MKTAYIAK", "--mask-rate", "2"]),
        ("probe-protein-record-zero", "range", [*pprot, "--fasta", "{D}/ref.fa", "--record", "0"]),
        ("bench-protein-samples-zero", "range", ["bench", "protein", "--reference", "{D}/ref.fa", "--samples", "0",
                                                 "--model", "mdm", "--device", "cpu"]),
        ("bench-protein-lengths-zero", "range", ["bench", "protein", "--reference", "{D}/ref.fa", "--lengths", "0-5",
                                                 "--samples", "1", "--model", "mdm", "--device", "cpu"]),
        ("bench-protein-lengths-too-long", "unclear", ["bench", "protein", "--reference", "{D}/ref.fa", "--lengths",
                                                     "10-9999", "--samples", "2", "--model", "mdm", "--device", "cpu",
                                                     "--reference-split", "all"]),
        ("sweep-batch-size-zero", "range", [*sweep, "--batch-size", "0", "--json", "{D}/s2.json"]),
        ("eval-estimator-states-zero", "range", [*evals[:5], "0", *evals[6:]]),
        ("bench-probe-states-zero", "range", ["bench-probe", "--states", "0", "--no-markdown", "--device", "cpu"]),
        ("train-sudoku-steps-zero", "range", ["train", "sudoku", "--steps", "0", "--out", "{D}/t0.safetensors"]),
        ("train-sudoku-dropout-two", "range", ["train", "sudoku", "--dropout", "2", "--out", "{D}/t1.safetensors"]),
        ("train-order-threads-negative", "range", ["train-order", "sudoku", "--threads", "-2",
                                                   "--out", "{D}/o.safetensors"]),
        # a budget no sampler runs: train-order trained at it, bench-order failed at its first row naming "steps"
        ("train-order-steps-budget-huge", "range", ["train-order", "sudoku", "--steps-budget", "5,5000",
                                                    "--updates", "1", "--out", "{D}/o_budget.safetensors"]),
        ("bench-order-budget-huge", "range", ["bench-order", "sudoku", "--puzzles", P, "--budgets", "5000",
                                              "--json", "{D}/bo.json"]),
        ("mask-predict-steps-zero", "range", [*bench, "--sampler", "mask_predict", "--set", "steps=0"]),
        ("learned-steps-huge", "range", [*bench, "--sampler", "learned", "--set", "steps=99999999",
                                         "--set", "selector=assets/sudoku_order_selector.safetensors"]),
        # other bad inputs
        ("bench-puzzles-empty", "other", [*bench[:2], "--puzzles", "{D}/empty.txt", *bench[4:]]),
        ("bench-model-is-directory", "other", [*bench[:4], "--model", "{D}/folder"]),
        ("bench-protein-reference-directory", "other", ["bench", "protein", "--reference", "{D}/folder",
                                                        "--samples", "1", "--model", "mdm", "--device", "cpu"]),
        ("make-estimator-data-out-file", "other", ["make-estimator-data", "sudoku", "--out", "{D}/afile",
                                                   "--states", "1"]),
        ("estimate-protein-estimator-on-sudoku", "other", ["estimate", "sudoku", "--puzzle", EASY, "--device", "cpu",
                                                           "--estimator", "assets/protein_mi_estimator.safetensors"]),
        ("probe-oracle4-too-short", "other", ["probe", "oracle4", "--puzzle", "12", "--no-progress"]),
        ("generate-template-arabic-digit", "other", [*gen, "--template", "MK\u0663__"]),
        ("bench-device-tpu", "other", [*bench, "--device", "tpu"]),
        ("probe-sudoku-solved", "other", ["probe", "sudoku", "--puzzle", EASY_SOL, "--no-progress", "--device", "cpu"]),
        ("estimate-sudoku-solved", "other", ["estimate", "sudoku", "--puzzle", EASY_SOL, "--device", "cpu"]),
        ("estimate-estimator-of-another-model", "other", ["estimate", "sudoku", "--puzzle", EASY, "--device", "cpu",
                                                          "--estimator", "assets/sudoku_mi_estimator_hard.safetensors"]),
        ("mix-nan", "range", ["make-estimator-data", "sudoku", "--out", "{D}/mixdata", "--mix", "1,nan,1"]),
        ("set-twice", "other", [*bench, "--sampler", "topk", "--set", "k=2", "--set", "k=3"]),
        ("mix-negative", "range", ["make-estimator-data", "sudoku", "--out", "{D}/mixdata", "--mix", "-1,1,1"]),
        ("sweep-markdown-into-json", "safety", [*sweep, "--json", "{D}/s3.json", "--markdown", "{D}/exists.json"]),
        ("train-pool-file-empty", "other", ["train", "sudoku", "--out", "{D}/t2.safetensors", "--pool-file",
                                            "{D}/empty.txt", "--pool-dir", "{D}/pools"]),
        ("train-estimator-variants-empty", "other", ["train-estimator", "--data", "{D}/folder", "--variants", ""]),
        ("train-estimator-variants-trailing-comma", "other", ["train-estimator", "--data", "{D}/folder",
                                                              "--variants", "log:bound,"]),
        # the second audit (twenty-first session): a report cut, files beside an output overwritten, pairings unchecked
        ("diagnose-markdown-lone-start", "safety", [*diag, "--section", "ab", "--markdown", "{D}/lone.md"]),
        ("sweep-markdown-reversed-markers", "safety", [*sweep, "--markdown", "{D}/reversed.md"]),
        ("diagnose-section-ends-the-comment", "other", [*diag, "--json", "{D}/dg.json", "--section", "x -->",
                                                        "--markdown", "{D}/r.md"]),
        ("sweep-json-is-the-markdown", "safety", [*sweep, "--json", "{D}/same.md", "--markdown", "{D}/same.md"]),
        ("train-pool-dir-a-file", "traceback", ["train", "sudoku", "--out", "{D}/t3.safetensors", "--pool-dir",
                                                "{D}/afile", *tiny_train]),
        ("train-pool-dir-in-proc", "other", ["train", "sudoku", "--out", "{D}/t4.safetensors", "--pool-dir",
                                             "/proc/pools", *tiny_train]),
        ("train-config-beside-out-exists", "safety", ["train", "sudoku", "--out", "{D}/exists_cfg.safetensors",
                                                      *tiny_train]),
        ("train-checkpoint-beside-out-exists", "safety", ["train", "sudoku", "--out", "{D}/exists_run.safetensors",
                                                          *tiny_train]),
        ("train-out-ckpt", "safety", ["train", "sudoku", "--out", "{D}/c.ckpt", *tiny_train]),
        ("train-out-json", "safety", ["train", "sudoku", "--out", "{D}/w.json", *tiny_train]),
        ("train-estimator-out-json", "safety", ["train-estimator", "--data", "{D}/folder", "--out", "{D}/w.json"]),
        ("train-estimator-no-out", "traceback", ["train-estimator", "--data", "{D}/folder"]),
        ("train-order-posterior-beside-out-exists", "safety", ["train-order", "sudoku", "--out",
                                                               "{D}/exists_sel.safetensors", "--device", "cpu"]),
        ("train-order-init-of-another-domain", "other", ["train-order", "sudoku", "--out", "{D}/o.safetensors",
                                                         "--init", "assets/protein_order_selector.safetensors"]),
        ("probe-json-is-the-model", "safety", ["probe", "sudoku", "--puzzle", EASY, "--model",
                                               "{D}/exists_model.safetensors", "--json", "{D}/exists_model.safetensors",
                                               "--force", "--no-progress"]),
        ("estimate-json-is-the-estimators-config", "safety", ["estimate", "sudoku", "--puzzle", EASY, "--estimator",
                                                              "{D}/exists_est.safetensors", "--json",
                                                              "{D}/exists_est.json", "--force"]),
        ("eval-estimator-of-another-model", "other", [*evals, "--model", "assets/sudoku_mdm.safetensors"]),
        ("train-box-2", "other", ["train", "sudoku", "--out", "{D}/t5.safetensors", "--box", "2", *tiny_train]),
        ("train-val-file-empty", "unclear", ["train", "sudoku", "--out", "{D}/t6.safetensors", "--val-file",
                                             "{D}/empty_pool.txt.gz", "--pool-dir", "{D}/pools", *tiny_train]),
        ("train-distill-without-teacher", "other", ["train", "sudoku", "--out", "{D}/t7.safetensors", "--distill",
                                                    "0.3", *tiny_train]),
        ("estimate-sudoku-estimator-on-protein", "unclear", ["estimate", "protein", "--sequence", "MKTA__IAKQR",
                                                             "--estimator", "assets/sudoku_mi_estimator.safetensors"]),
        ("train-estimator-manifest-not-json", "unclear", ["train-estimator", "--data", "{D}/badmanifest", "--out",
                                                          "{D}/e.safetensors"]),
        ("eval-estimator-4x4-puzzles", "unclear", ["eval-estimator", "sudoku", "--puzzles", "{D}/four.txt", "--states",
                                                   "1", "--no-markdown", "--device", "cpu"]),
        ("diagnose-sampler-key-twice", "other", [*diag, "--json", "{D}/dg2.json", "--sampler", "topk:k=2;k=3"]),
        ("diagnose-unknown-sampler", "other", [*diag, "--json", "{D}/dg3.json", "--sampler", "foo"]),
        ("diagnose-sampler-twice", "other", [*diag, "--json", "{D}/dg4.json", "--sampler", "topk:k=2"]),
        ("markdown-and-no-markdown", "other", [*evals, "--markdown", "{D}/n.md", "--no-markdown"]),
        ("probe-protein-junk-pth", "unclear", [*pprot[:3], "{D}/junk.pth", *pprot[4:], "--sequence", "MKTA_YIAKQR"]),
        # the third sweep: an empty path was read as '.', the working folder
        ("make-estimator-data-out-empty", "other", ["make-estimator-data", "sudoku", "--out", "", "--states", "1"]),
        ("bench-model-empty", "other", [*bench[:4], "--model", ""]),
        # the fourth sweep: an output inside a folder the command reads (--force replaced an estimator's shard)
        ("train-estimator-out-is-a-shard", "safety", ["train-estimator", "--data", "{D}/estdata", "--out",
                                                      "{D}/estdata/shard_00000.safetensors", "--force"]),
        ("train-estimator-config-beside-out-is-the-manifest", "safety", ["train-estimator", "--data", "{D}/estdata",
                                                                         "--out", "{D}/estdata/manifest.safetensors",
                                                                         "--force"]),
        ("bench-suite-json-over-its-data", "safety", ["bench-suite", "sudoku", "--data", "{D}/suite", "--json",
                                                      "{D}/suite/top1465.txt", "--force"]),
        ("bench-model-empty-file", "unclear", [*bench[:4], "--model", "{D}/empty_w.safetensors"]),
        ("bench-model-cut-short", "unclear", [*bench[:4], "--model", "{D}/half_w.safetensors"]),
        ("bench-model-json-named-safetensors", "unclear", [*bench[:4], "--model", "{D}/json_w.safetensors"]),
        # the fifth sweep: a config's or a sampler's check named its field ("k must be >= 1"), not the option typed
        ("train-n-heads-not-dividing", "unclear", ["train", "sudoku", "--out", "{D}/t8.safetensors", *tiny_train,
                                                   "--n-heads", "3"]),
        ("train-fractions-over-one", "unclear", ["train", "sudoku", "--out", "{D}/t9.safetensors", *tiny_train,
                                                 "--puzzle-frac", "0.8", "--onpolicy-frac", "0.5"]),
        ("train-attention-unknown", "unclear", ["train", "sudoku", "--out", "{D}/t10.safetensors", *tiny_train,
                                                "--attention", "foo"]),
        ("bench-set-gamma-negative", "unclear", [*bench, "--sampler", "mi", "--set", "gamma=-1"]),
        ("sweep-grid-k-zero", "unclear", [*sweep[:4], "--grid", "topk:k=1,0", *sweep[6:], "--json", "{D}/s4.json"]),
        ("diagnose-sampler-k-zero", "unclear", [*diag[:4], "--sampler", "topk:k=0", *diag[6:], "--json",
                                                "{D}/dg5.json"]),
        ("bench-order-antibody-rows-reversed", "unclear", ["bench-order", "antibody", "--csv", "{D}/ab.csv", "--rows",
                                                           "90-80", "--json", "{D}/bo_ab.json", "--device", "cpu"]),
        ("sweep-merge-json-lines", "unclear", [*sweep, "--json", "{D}/lines.json", "--merge"]),
        ("generate-antibody-length-75", "unclear", ["generate", "antibody", "--length", "75", "--device", "cpu"]),
        # help must exit 0
        ("train-help", "help", ["train", "--help"]),
    ]


VH = ("QVQLQQSGGELAKPGASVKVSCKASGYTFSSFWMHWVRQAPGQGLEWIGYINPRSGYTEYNEIFRDKATMTTDTSTSTAYMELSSLRSEDTAVYYCASFLGRGAM"
      "DYWGQGTTVTVSS")  # abituzumab's heavy chain


def env_cases() -> list[tuple[str, dict[str, str], list[str], str]]:
    """``(id, environment, argv, text of the one error line)``: a variable naming a model the command cannot use.
    ``MI_LENS_ANTIBODY_MODEL`` was read by the app alone: every antibody command loaded the installed AntiBERTy."""
    probe = ["probe", "antibody", "--sequence", VH, "--mask-positions", "cdr3", "--eps", "0.5", "--no-progress",
             "--device", "cpu", "--threads", "1"]
    return [
        ("antibody-model-env-missing-folder", {"MI_LENS_ANTIBODY_MODEL": "{D}/no_antiberty"}, probe,
         "AntiBERTy weights folder not found: {D}/no_antiberty (the file $MI_LENS_ANTIBODY_MODEL names)"),
        ("antibody-model-env-sudoku-weights", {"MI_LENS_ANTIBODY_MODEL": "{D}/exists_model.safetensors"}, probe,
         "exists_model.safetensors is a model for sudoku (its JSON records the domain sudoku9), not for antibody "
         "(the file $MI_LENS_ANTIBODY_MODEL names)"),
    ]


def fill(argv: list[str], places: dict[str, str]) -> list[str]:
    return [a.replace("{D}", places["D"]) for a in argv]
