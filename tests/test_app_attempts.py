"""Decoding again under another symmetric view in the app (``decode_trace(attempts=K)``, the Decoding page's
"Decodes at most"): the retried decode is shown mapped back to the puzzle, with honest totals."""

import dataclasses

import numpy as np
import pytest

from mi_core.bench.decode import retry_for
from mi_core.decoding import decode_final, make_strategy
from mi_lens_app import core, exports, traces
from mi_lens_app.domains import DOMAINS
from tests import test_app_pages, test_app_protein
from tests.test_app_core import EASY, EASY_SOL
from tests.test_app_links import link_notes
from tests.test_app_pages import EASY_PRESET, assert_clean, frame_numbers, run_page

weights = test_app_pages.weights
env = test_app_pages.env
protein_weights = test_app_protein.weights
S9, S4, PROTEIN = DOMAINS["sudoku9"], DOMAINS["sudoku4"], DOMAINS["protein"]
START = np.array(S9.parse_state(EASY))
SOLUTION = np.array(S9.parse_state(EASY_SOL))


def rejecting(count: int):
    """Sudoku whose rule check rejects the first ``count`` results it reads, and a list of what it read."""
    read = []

    def verify(start, final):
        read.append(np.array(final))
        return len(read) > count

    return dataclasses.replace(S9, verify=verify), read


def text(tokens) -> str:
    return "".join("." if t == 0 else str(int(t)) for t in tokens)


def test_a_retried_decode_is_the_view_decode_mapped_back_with_the_givens_in_place(tiny_mdm):
    domain, read = rejecting(2)
    trace = traces.decode_trace(tiny_mdm, None, domain, EASY, EASY_SOL, "topk", {"k": 7}, seed=5, attempts=4)
    assert (trace.attempts, trace.attempt, trace.rejected) == (4, 3, 2) and len(read) == 3
    retry = retry_for(S9, tiny_mdm, 4)
    view = traces.decode_trace(tiny_mdm, None, S9, text(retry.to_view(START, 2)), None, "topk", {"k": 7}, seed=5 + 2)
    assert np.array_equal(trace.steps[-1].tokens, retry.from_view(view.steps[-1].tokens, 2))
    assert not np.array_equal(trace.steps[-1].tokens, view.steps[-1].tokens)  # view 2 is not the grid itself
    for shown, seen in zip(trace.steps, view.steps, strict=True):
        assert np.array_equal(shown.tokens[START > 0], START[START > 0])  # the givens where the puzzle has them
        put_back = np.empty_like(seen.entropy)
        put_back[retry.positions[2]] = seen.entropy
        assert np.allclose(shown.entropy, put_back)
        assert np.array_equal(shown.chosen[retry.positions[2]], seen.chosen)
        filled = shown.tokens > 0
        assert np.array_equal(shown.errors, filled & (shown.tokens != SOLUTION))  # against the puzzle's solution
    assert np.array_equal(trace.steps[0].tokens, START)
    assert np.array_equal(read[0], traces.decode_trace(tiny_mdm, None, S9, EASY, None, "topk", {"k": 7},
                                                     seed=5).steps[-1].tokens)  # decode 1: the grid as it is
    first, second = (traces.decode_trace(tiny_mdm, None, S9, text(retry.to_view(START, k)), None, "topk", {"k": 7},
                                       seed=5 + k) for k in (0, 1))
    assert trace.earlier_passes == first.steps[-1].passes + second.steps[-1].passes


def test_every_decode_rejected_shows_the_last_and_counts_them_all(tiny_mdm):
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "topk", {"k": 7}, attempts=3)
    assert (trace.attempt, trace.rejected) == (3, 3) and not trace.solved  # a random model breaks the rules
    assert trace.earlier_passes > 0
    record = exports.trace_json(trace, EASY, "sudoku9", S9.labels(), 0.0, 0)
    assert '"decode": 3' in record and '"rejected_decodes": 3' in record and '"decodes_at_most": 3' in record


def test_the_progress_callback_hears_which_decode_runs(tiny_mdm):
    heard = []
    traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "topk", {"k": 7}, attempts=3,
                      progress=lambda filled, masked, decode: heard.append((decode, filled, masked)))
    assert [d for d, _, _ in heard] == sorted(d for d, _, _ in heard) and {d for d, _, _ in heard} == {1, 2, 3}
    last = {d: (f, m) for d, f, m in heard}  # each decode ends with every blank filled
    assert last == {d: (EASY.count("."), EASY.count(".")) for d in (1, 2, 3)}


def test_one_decode_is_the_plain_decode_and_never_reads_the_rules(tiny_mdm):
    domain, read = rejecting(99)
    trace = traces.decode_trace(tiny_mdm, None, domain, EASY, EASY_SOL, "topk", {"k": 7}, seed=3)
    assert not read
    assert (trace.attempts, trace.attempt, trace.rejected, trace.earlier_passes) == (1, 1, 0, 0)
    final = decode_final(tiny_mdm, core.tokens_of(EASY, S9, "cpu")[None], make_strategy("topk", k=7), seed=3)
    assert np.array_equal(trace.steps[-1].tokens, final.tokens[0].numpy())
    assert '"decode"' not in exports.trace_json(trace, EASY, "sudoku9", S9.labels(), 0.0, 0)


def test_a_solved_first_decode_is_not_decoded_again(tiny_mdm):
    domain, read = rejecting(0)
    trace = traces.decode_trace(tiny_mdm, None, domain, EASY, EASY_SOL, "topk", {"k": 7}, attempts=8)
    assert len(read) == 1 and (trace.attempt, trace.rejected, trace.earlier_passes) == (1, 0, 0)


@pytest.mark.parametrize("domain, attempts, match", [
    (S9, 0, "decodes at most must be a whole number >= 1, got 0"),
    (S4, 2, "cannot decode again: it declares no symmetric views"),
    (PROTEIN, 2, "cannot decode again"),
])
def test_decodes_at_most_rejects_what_it_cannot_do(tiny_mdm, domain, attempts, match):
    with pytest.raises(ValueError, match=match):
        traces.decode_trace(tiny_mdm, None, domain, EASY, None, "topk", {"k": 7}, attempts=attempts)


def test_the_page_says_which_decode_it_shows_and_the_passes_of_all(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb", attempts="3",
                  step="12")
    assert_clean(at)
    assert at.number_input(key="attempts").value == 3
    numbers = frame_numbers(at)[0]
    assert numbers["decode"] == "3 of at most 3" and numbers["step"] == "12 / 12"
    assert numbers["passes"] == "12 (36 in all)"  # three decodes of topk k=4 on 46 blanks
    (shown,) = [e.value for e in at.error if "decodes broke a rule" in e.value]  # topk's: eb is not at its end
    assert "this is the last, read in another symmetric view (bands, rows and columns permuted, maybe transposed, " \
           "digits relabelled) and shown mapped back" in shown
    assert shown.startswith("Finished in 36 passes over 3 decodes (12 in the one shown) with")  # the cost first


def test_the_page_clamps_a_linked_count_and_names_it(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="9", b="topk", b_topk_k="9",
                  attempts="500")
    assert_clean(at)
    assert at.number_input(key="attempts").value == 32
    (note,) = link_notes(at)
    assert "attempts=500 → 32 (the largest allowed)" in note


def test_the_page_offers_decodes_only_where_the_rules_can_be_checked(env):
    at = run_page("pages/3_Decoding.py", domain="4x4", attempts="3")
    assert_clean(at)
    assert len(frame_numbers(at)) == 2  # the page decodes the 4x4 oracle's puzzle
    assert link_notes(at) == ["Part of this link is not used on this page: attempts."]
    assert "attempts" not in [n.key for n in at.number_input]


def test_proteins_have_no_decodes_input(monkeypatch, protein_weights):
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(protein_weights[0]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    at = test_app_protein.run_page("pages/3_Decoding.py")
    assert_clean(at)
    assert "attempts" not in [n.key for n in at.number_input]
    assert "temp" in [n.key for n in at.number_input]  # the page's other settings are there


@pytest.mark.parametrize("attempts", [1, 3])
def test_the_app_seeds_a_decode_as_bench_seeds_a_file_of_that_one_puzzle(tiny_mdm, attempts):
    """At temperature 1 and seed 3 the page showed another decode than ``bench --seed 3`` gives for the same
    puzzle (bench seeds input i with item_seed(seed, i)); the exported seed did not reproduce the trace."""
    from mi_core.bench.decode import decode_all

    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "eb", {"gamma": 0.5}, temperature=1.0, seed=3,
                              attempts=attempts)
    gen = decode_all(tiny_mdm, [START], make_strategy("eb", gamma=0.5), temperature=1.0, seed=3,
                     retry=retry_for(S9, tiny_mdm, attempts) if attempts > 1 else None)
    assert np.array_equal(trace.steps[-1].tokens, gen.sequences[0])
    assert trace.earlier_passes + trace.steps[-1].passes == gen.passes[0]


@pytest.mark.parametrize("attempts", [1, 3])
def test_an_exported_traces_command_decodes_it_again(tiny_mdm, tmp_path, monkeypatch, attempts):
    """The command in a trace's JSON, run on a file of its puzzle, ends on the trace's grid in its passes."""
    import json
    import shlex

    from mi_core.cli import main as cli_main
    from mi_lens_app.domains import bench_domain_options

    model = tmp_path / "m.safetensors"
    from mi_core.domains.sudoku.mdm import save_sudoku_mdm

    save_sudoku_mdm(tiny_mdm, model)
    trace = traces.decode_trace(tiny_mdm, None, S9, EASY, EASY_SOL, "eb", {"gamma": 0.5}, temperature=1.0, seed=3,
                              attempts=attempts)
    record = json.loads(exports.trace_json(trace, EASY, "sudoku9", S9.labels(), 1.0, 3,
                                           command=exports.bench_command(trace, 1.0, 3, bench_domain_options("sudoku9"))))
    assert record["command"].startswith("python -m mi_core bench sudoku --puzzles PUZZLE_FILE --sampler eb")
    (tmp_path / "p.txt").write_text(EASY + "\n")
    argv = shlex.split(record["command"].replace("PUZZLE_FILE", str(tmp_path / "p.txt")))[3:]
    out = tmp_path / "r.json"
    assert cli_main([*argv, "--model", str(model), "--json", str(out), "--threads", "1"]) == 0
    result = json.loads(out.read_text())
    assert result["sequences"][0] == record["steps"][-1]["grid"]
    assert result["passes"][0] == trace.earlier_passes + trace.steps[-1].passes


def test_a_second_models_command_names_it_as_the_command_line_does():
    from mi_lens_app.domains import bench_domain_options

    assert bench_domain_options("sudoku9") == ["sudoku"]
    assert bench_domain_options("sudoku9_views") == ["sudoku", "--views", "4"]
    assert bench_domain_options("sudoku9_8layer") == ["sudoku", "--model", "assets/sudoku_mdm_hard.safetensors"]
