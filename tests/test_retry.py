"""Decoding again under another symmetric view while the result breaks the domain's rules (``--attempts``)."""

import json

import numpy as np
import pytest

from mi_core.bench.decode import decode_all, retry_for
from mi_core.cli import main
from mi_core.decoding import make_strategy
from mi_core.domain import get_domain
from mi_core.domains.sudoku import parse_grid
from mi_core.domains.sudoku.generator import follows_rules
from tests.test_sudoku_training import HARD, SOLVED
from tests.test_views import Elimination

SUDOKU = get_domain("sudoku")


def retry(attempts: int):
    return retry_for(SUDOKU, Elimination(), attempts)


def test_views_map_a_grid_there_and_back_and_keep_it_valid():
    r = retry(5)
    grid, puzzle = np.array(parse_grid(SOLVED)), np.array(parse_grid(HARD))
    assert np.array_equal(r.to_view(grid, 0), grid)  # view 0 is the grid itself
    for k in range(5):
        seen = r.to_view(grid, k)
        assert follows_rules(r.to_view(np.where(puzzle > 0, grid, 0), k), seen)
        assert np.array_equal(r.from_view(seen, k), grid)
        assert np.array_equal(r.to_view(puzzle, k) == 0, (puzzle == 0)[r.positions[k]])  # blanks stay blank
    assert len({tuple(r.to_view(grid, k)) for k in range(5)}) == 5


def test_rules_need_every_blank_filled_the_givens_kept_and_no_repeat():
    grid = np.array(parse_grid(SOLVED))
    start = np.where(np.arange(81) % 3 == 0, grid, 0)
    assert follows_rules(start, grid)
    assert not follows_rules(start, np.where(np.arange(81) == 1, 0, grid))  # a blank left
    swapped = grid.copy()
    swapped[[0, 1]] = swapped[[1, 0]]  # still a permutation in row 1, not in columns 1 and 2
    assert not follows_rules(start, swapped)
    other = np.where(grid == 1, 2, np.where(grid == 2, 1, grid))  # a valid grid that changes given digits
    assert not follows_rules(start, other)


def test_only_rejected_results_are_decoded_again_and_their_passes_add_up():
    model, strategy = Elimination(), make_strategy("sequential")
    puzzles = [np.array(parse_grid(HARD)), np.array(parse_grid(SOLVED.replace("5", ".", 3)))]
    once = decode_all(model, puzzles, strategy)
    assert once.attempts == [1, 1]
    rejected = {0: 2}  # the first puzzle's first two results are rejected, the second's never

    def verify(start, final):
        i = 0 if np.array_equal(start, puzzles[0]) else 1
        rejected[i] = rejected.get(i, 0) - 1
        return rejected[i] < 0

    r = retry(4)
    r.verify = verify
    gen = decode_all(model, puzzles, strategy, retry=r)
    assert gen.attempts == [3, 1]
    third = decode_all(model, [r.to_view(puzzles[0], 2)], strategy, seed=2)
    assert np.array_equal(gen.sequences[0], r.from_view(third.sequences[0], 2))  # read back from view 2
    second = decode_all(model, [r.to_view(puzzles[0], 1)], strategy, seed=1)
    assert gen.passes[0] == once.passes[0] + second.passes[0] + third.passes[0]
    assert np.array_equal(gen.sequences[1], once.sequences[1]) and gen.passes[1] == once.passes[1]


def test_views_are_drawn_one_by_one_so_fewer_decodes_are_a_prefix_of_more():
    few, many = retry(3), retry(8)
    assert np.array_equal(few.positions, many.positions[:3]) and np.array_equal(few.values, many.values[:3])


def always(answer: bool):
    return lambda start, final: answer


def test_a_result_always_rejected_is_decoded_exactly_k_times():
    model, strategy = Elimination(), make_strategy("sequential")
    r, rounds = retry(3), []
    r.verify, r.announce = always(False), lambda k, count: rounds.append((k, count))
    gen = decode_all(model, [np.array(parse_grid(HARD))], strategy, retry=r)
    assert gen.attempts == [3] and len(gen.decodes[0]) == 3 and sum(gen.decodes[0]) == gen.passes[0]
    assert rounds == [(2, 1), (3, 1)]  # what grows bench's progress bar


def test_a_retry_seed_is_the_puzzles_own_whichever_others_are_retried():
    model, strategy = Elimination(), make_strategy("sequential")
    puzzles = [np.array(parse_grid(HARD)), np.array(parse_grid(HARD.replace(".", "", 0)[::-1]))]
    finals = []
    for first_rejected in (False, True):
        r = retry(2)
        r.verify = lambda start, final, f=first_rejected: not (f or not np.array_equal(start, puzzles[0]))
        gen = decode_all(model, puzzles, strategy, retry=r, temperature=1.0, seed=3)
        assert gen.attempts == [2 if first_rejected else 1, 2]
        finals.append(gen.sequences[1])
    assert np.array_equal(*finals)  # sampled at temperature 1: a seed that moved with the batch would differ


def test_a_retry_of_a_template_given_its_index_is_seeded_as_in_the_whole_batch():
    model, strategy = Elimination(), make_strategy("sequential")
    puzzles = [np.array(parse_grid(HARD)), np.array(parse_grid(HARD.replace(".", "", 0)[::-1]))]
    runs = []
    for batch, items in ((puzzles, None), (puzzles[1:], [1])):  # the second puzzle in its batch, then alone
        r = retry(3)
        r.verify = always(False)
        runs.append(decode_all(model, batch, strategy, retry=r, temperature=1.0, seed=3, items=items))
    whole, alone = runs
    assert alone.attempts == [3] and alone.decodes[0] == whole.decodes[1]
    assert np.array_equal(alone.sequences[0], whole.sequences[1])  # every retry seeded by index 1, not by 0


def test_a_retry_replays_no_first_decode_of_a_neighbouring_seed(monkeypatch):
    """Retry k of run s was seeded as run s + k's first decode: at temperature > 0 two runs shared streams."""
    from mi_core.bench import decode

    def seeds_of(seed):
        r = retry(3)
        r.verify = always(False)
        seen = []
        real = decode.decode_all
        monkeypatch.setattr(decode, "decode_all", lambda *a, **k: seen.append(k["seed"]) or real(*a, **k))
        decode.decode_all(Elimination(), [np.array(parse_grid(HARD))], make_strategy("sequential"), retry=r,
                          temperature=1.0, seed=seed)
        monkeypatch.setattr(decode, "decode_all", real)
        return seen

    runs = {seed: seeds_of(seed) for seed in range(4)}
    assert all(seen[0] == seed and len(seen) == 3 for seed, seen in runs.items())
    retried = {s for seen in runs.values() for s in seen[1:]}
    assert len(retried) == 8 and not retried & set(range(4))  # first decodes are seeded 0..3
    assert runs[1] == seeds_of(1)  # and a rerun draws the same seeds


def test_the_warm_up_decodes_once(monkeypatch):
    from mi_core.bench import decode

    r = retry(4)
    r.verify = always(False)
    seen = []
    real = decode.decode_all
    monkeypatch.setattr(decode, "decode_all", lambda *a, **k: seen.append(k.get("retry")) or real(*a, **k))
    decode.warm_up(Elimination(), [np.array(parse_grid(HARD))], make_strategy("sequential"), retry=r)
    assert seen == [None]


def test_bench_records_attempts_and_refuses_them_where_a_domain_cannot_check(tmp_path, model_path, capsys):
    puzzles, out = tmp_path / "p.txt", tmp_path / "r.json"
    puzzles.write_text(HARD + "\n" + SOLVED.replace("5", ".", 3) + "\n")
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--attempts", "3",
                 "--json", str(out)]) == 0
    row = json.loads(out.read_text())
    decodes = row["decode_passes"]
    assert row["attempts"] == 3 and len(decodes) == 2 and all(1 <= len(d) <= 3 for d in decodes)
    assert row["mean_attempts"] == sum(map(len, decodes)) / 2 and row["passes"] == [sum(d) for d in decodes]
    for text, final, d in zip((HARD, SOLVED.replace("5", ".", 3)), row["sequences"], decodes):
        assert follows_rules(parse_grid(text), parse_grid(final)) or len(d) == 3  # kept only when accepted or last
    (tmp_path / "o.txt").write_text("12.434.221434321\n")  # a 4x4 puzzle: no symmetries declared
    assert main(["bench", "oracle4", "--puzzles", str(tmp_path / "o.txt"), "--attempts", "2"]) == 2
    assert "unrecognized arguments: --attempts 2" in capsys.readouterr().err
    assert main(["bench", "protein", "--help"]) == 0 and "--attempts" not in capsys.readouterr().out
    with pytest.raises(ValueError, match="no symmetries and rule check"):
        retry_for(get_domain("protein"), Elimination(), 2)


def test_a_sweep_keeps_attempts_apart_and_shows_them(tmp_path, model_path):
    puzzles, out, md = tmp_path / "p.txt", tmp_path / "s.json", tmp_path / "B.md"
    puzzles.write_text(HARD + "\n")
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--model", str(model_path),
            "--grid", "topk:k=8", "--name", "demo"]
    assert main(base) == 0
    assert main(base + ["--attempts", "2", "--merge", "--markdown", str(md)]) == 0
    rows = json.loads(out.read_text())
    assert [r.get("attempts") for r in rows] == [None, 2]  # merged beside the plain row, not over it
    assert 1 <= rows[1]["mean_attempts"] <= 2
    assert "| sampler | params | decodes at most | n | accuracy | cell acc. | mean decodes | mean passes |" in md.read_text()


def test_progress_moves_as_the_cells_of_a_batch_fill_and_adds_up_to_the_states():
    puzzles = [np.array(parse_grid(HARD)), np.array(parse_grid(SOLVED.replace("5", ".", 3))),
               np.array(parse_grid(SOLVED))]  # the last has nothing to fill
    heard = []
    decode_all(Elimination(), puzzles, make_strategy("sequential"), batch_size=2, progress=heard.append)
    assert min(heard) >= 0 and sum(heard) == pytest.approx(3)
    assert len([x for x in heard if x > 0]) > 3  # the first batch reports as it fills, not once at its end
