"""The Sudoku MDM's training data and trainer: difficulty grade, device transforms, on-policy states, resume."""

import dataclasses
import json
import os
import random
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core.domains.sudoku import parse_grid
from mi_core.domains.sudoku.data import DeviceBatches, apply_symmetry, onpolicy_states, random_symmetry
from mi_core.domains.sudoku.generator import harden, is_valid_solution, make_puzzle, random_grid, random_transform
from mi_core.domains.sudoku.mdm import SudokuMDMConfig
from mi_core.domains.sudoku.pool import build_graded_pool
from mi_core.domains.sudoku.solver import grade, solve_count
from mi_core.domains.sudoku.train import SudokuTask, TrainConfig
from mi_core.train.mdm import checkpoint_path, train

SOLVED = "534678912672195348198342567859761423426853791713924856961537284287419635345286179"
# singles only: the solved grid with one cell per box blanked
EASY = "".join("." if i in (0, 4, 8, 30, 40, 50, 60, 70, 80) else c for i, c in enumerate(SOLVED))
# Kaggle "Hard" (difficulty 4.7) and a classic of the top1465 set, then Arto Inkala's "hardest" puzzle
HARD = "..8..5.1..9.2...3.1......67..1.37...96...4.5......8..9.24.....5.............7..9."
TOP = "4...3.......6..8..........1....5..9..8....6...7.2........1.27..5.3....4.9........"
INKALA = "8..........36......7..9.2...5...7.......457.....1...3...1....68..85...1..9....4.."



def run_train(argv: list[str]):
    """``python -m mi_core train ARGV`` in this process, its errors raised (not printed)."""
    from mi_core.cli import parse

    command, args = parse(["train", *argv])
    return command.main(args)

def _digits(text):
    return parse_grid(text)


def test_grade_is_monotone_on_hand_made_puzzles():
    grades = [grade(_digits(p)) for p in (SOLVED, EASY, HARD, TOP)]
    assert grades[0] == grades[1] == 0, "singles solve the easy ones without a guess"
    assert grades[1] < grades[2] < grades[3]
    assert grade(_digits(INKALA)) > grades[2]


def test_grade_rejects_contradictions():
    bad = list(_digits(HARD))
    bad[1] = bad[2]  # two equal digits in row 1
    with pytest.raises(ValueError, match="contradict|no solution"):
        grade(bad)


def test_harden_keeps_uniqueness_and_raises_the_grade():
    rng = random.Random(3)
    solution = random_grid(rng)
    start = make_puzzle(solution, 0, rng, tries=1)
    puzzle, g = harden(start, solution, rng, 150)
    assert g == grade(puzzle) >= grade(start)
    assert solve_count(puzzle, limit=1)[1] == solution and all(p in (0, s) for p, s in zip(puzzle, solution))


def _grids(n, seed=0):
    rng = random.Random(seed)
    return torch.tensor([random_grid(rng) for _ in range(n)])


def test_device_transforms_keep_grids_valid_and_pairs_aligned():
    grids = _grids(4).repeat(16, 1)
    puzzles = torch.where(torch.rand(grids.shape, generator=torch.Generator().manual_seed(1)) < 0.6, 0, grids)
    gen = torch.Generator().manual_seed(0)
    cells, relabel = random_symmetry(len(grids), gen)
    out, puz = apply_symmetry(grids, cells, relabel), apply_symmetry(puzzles, cells, relabel)
    assert all(is_valid_solution(g.numpy()) for g in out)
    assert ((puz == 0) | (puz == out)).all() and (puz == 0).sum() == (puzzles == 0).sum()


def test_device_transforms_match_numpy_in_distribution():
    """Where cells 0 and 1 land, and which digit 1 becomes, under both implementations."""
    n = 20000
    probe = np.zeros((2 * n, 81), np.int64)
    probe[0::2, 0], probe[1::2, 1] = 1, 1  # a pair shares its transform: one marker per grid
    moved = random_transform(probe, np.random.default_rng(0), pair=2)
    np_pos0, np_pos1 = (moved[0::2] != 0).argmax(1), (moved[1::2] != 0).argmax(1)
    np_digit = moved[0::2].max(1)
    cells, relabel = random_symmetry(n, torch.Generator().manual_seed(0))
    where = cells.argsort(1)  # where[:, c]: the output cell that input cell c went to
    th_pos0, th_pos1, th_digit = where[:, 0].numpy(), where[:, 1].numpy(), relabel[:, 1].numpy()
    for pos0, pos1, digit in ((np_pos0, np_pos1, np_digit), (th_pos0, th_pos1, th_digit)):
        hist = np.bincount(pos0, minlength=81) / n
        assert np.abs(hist - 1 / 81).max() < 5 * np.sqrt(1 / 81 * 80 / 81 / n)
        digits = np.bincount(digit, minlength=10)[1:] / n
        assert np.abs(digits - 1 / 9).max() < 5 * np.sqrt(1 / 9 * 8 / 9 / n)
    # cells of one row stay in one row (no transpose) or go to one column (transpose), half the time each
    np_same, th_same = np.mean(np_pos0 // 9 == np_pos1 // 9), np.mean(th_pos0 // 9 == th_pos1 // 9)
    assert abs(np_same - 0.5) < 0.02 and abs(th_same - 0.5) < 0.02
    assert (relabel[:, 0] == 0).all()


def test_batches_mix_states_and_mask_only_blanks():
    rng = random.Random(0)
    grids = np.array([random_grid(rng) for _ in range(20)])
    pairs, grades = build_graded_pool(0, 6, 20, workers=1)
    data = DeviceBatches({"grids": grids, "puzzles": pairs, "grades": grades}, "cpu", 0.5, 0.25, 1.0, capacity=8)
    gen = torch.Generator().manual_seed(0)
    inputs, targets = data.sample(16, gen)
    assert inputs.shape == targets.shape == (16, 81)
    assert ((inputs == 0) | (inputs == targets)).all() and (inputs == 0).any(1).all()
    assert all(is_valid_solution(t.numpy()) for t in targets)
    states, sols = torch.as_tensor(pairs[:3, 0]), torch.as_tensor(pairs[:3, 1])
    data.add_states(states.repeat(4, 1), sols.repeat(4, 1))  # 12 into a buffer of 8 wraps around
    assert data.filled == 8 and data.cursor == 4
    inputs, targets = data.sample(16, gen)
    assert ((inputs == 0) | (inputs == targets)).all()


def test_batches_weight_hard_puzzles():
    pairs = np.zeros((2, 2, 81), np.int64)
    pairs[:, 1] = parse_grid(SOLVED)
    pairs[1, 0, 0] = 5
    data = DeviceBatches({"grids": pairs[:, 1], "puzzles": pairs, "grades": np.array([0, 9])}, "cpu", 1.0, 0.0, 1.0)
    idx = torch.multinomial(data.weights, 10000, replacement=True, generator=torch.Generator().manual_seed(0))
    assert abs((idx == 1).float().mean().item() - 10 / 11) < 0.02


def test_onpolicy_states_are_consistent_and_keep_the_error_state(tiny_mdm):
    pairs, _ = build_graded_pool(1, 4, 0, workers=1)
    puzzles, solutions = torch.as_tensor(pairs[:, 0]), torch.as_tensor(pairs[:, 1])
    states, sols, solved = onpolicy_states(tiny_mdm, puzzles, solutions, 3, torch.Generator().manual_seed(0), bf16=False)
    assert ((states == 0) | (states == sols)).all(), "every state agrees with its solution"
    assert (states == 0).any(1).all()
    assert len(states) == 4 * 3 + int((~solved).sum())  # a random tiny model fails every puzzle
    assert not solved.any()


def _tiny_run(tmp_path, steps, stop_after=0, resume=False, recurrent=False):
    deep = {"supervise": 2, "grad_iters": 2, "min_loops": 2, "ema": 0.9} if recurrent else {}
    cfg = TrainConfig(steps=steps, batch=16, grid_pool=30, puzzle_pool=8, max_harden=10, eval_every=4, log_every=1,
                      eval_puzzles=0, onpolicy_every=3, onpolicy_puzzles=4, warmup=2, bf16=False, **deep)
    shape = {"loops": 4, "attention": "peer", "inject": True} if recurrent else {}
    mcfg = SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, **shape)
    task = SudokuTask(mcfg, cfg, torch.device("cpu"), log=lambda m: None, pool_dir=tmp_path / "pools")
    return train(task, tmp_path / "run" / "m.safetensors", torch.device("cpu"), log=lambda m: None, resume=resume,
                 stop_after=stop_after)


def test_resume_gives_the_same_loss_curve(tmp_path):
    whole = _tiny_run(tmp_path / "a", 8)
    first = _tiny_run(tmp_path / "b", 8, stop_after=4)
    assert first["step"] == 4 and checkpoint_path(tmp_path / "b" / "run" / "m.safetensors").is_file()
    rest = _tiny_run(tmp_path / "b", 8, resume=True)
    losses = [p["train_loss"] for p in whole["curve"]]
    resumed = [p["train_loss"] for p in rest["curve"]]
    assert len(losses) == len(resumed) == 8
    assert resumed == pytest.approx(losses, rel=1e-6)
    sidecar = json.loads((tmp_path / "b" / "run" / "m_last.json").read_text())
    assert sidecar["curve"][-1]["step"] == 8


def test_recurrent_resume_gives_the_same_curve_and_counts_stretches(tmp_path):
    whole = _tiny_run(tmp_path / "a", 8, recurrent=True)
    _tiny_run(tmp_path / "b", 8, stop_after=4, recurrent=True)
    rest = _tiny_run(tmp_path / "b", 8, resume=True, recurrent=True)
    assert [p["train_loss"] for p in rest["curve"]] == pytest.approx([p["train_loss"] for p in whole["curve"]], rel=1e-6)
    assert [p["stretch"] for p in rest["curve"]] == [1] * 4 + [2] * 4
    cpu = [p["cpu_seconds"] for p in rest["curve"]]
    assert cpu == sorted(cpu) and cpu[0] > 0
    state = torch.load(checkpoint_path(tmp_path / "b" / "run" / "m.safetensors"), weights_only=True)
    assert state["stretch"] == 2 and "ema" in state and state["task"]["data"]["states"].dtype == torch.uint8


def test_peer_attention_sees_only_peers():
    from mi_core.domains.sudoku.mdm import SudokuMDM

    model = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32, attention="peer")).eval()
    x = torch.zeros(1, 81, dtype=torch.long)
    far = x.clone()
    far[0, 80] = 5  # r9c9: not a peer of r1c1 (cell 0), a peer of r1c9 (cell 8)
    one_layer = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, attention="peer")).eval()
    a, b = one_layer(x).logits, one_layer(far).logits
    assert torch.allclose(a[0, 0], b[0, 0]) and not torch.allclose(a[0, 8], b[0, 8])
    assert not torch.allclose(model(x).logits[0, 0], model(far).logits[0, 0])  # two layers: peers of peers


def test_peer_bias_warm_start_computes_what_the_file_does():
    from dataclasses import replace

    from mi_core.domains.sudoku.mdm import SudokuMDM

    base = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32)).eval()
    biased = SudokuMDM(replace(base.cfg, attention="peer_bias")).eval()
    missing, _ = biased.load_state_dict(base.state_dict(), strict=False)
    assert missing == ["peer_gain"]
    x = torch.randint(0, 10, (3, 81))
    assert torch.allclose(base(x).logits, biased(x).logits)
    with torch.no_grad():
        biased.peer_gain.fill_(2.0)
    assert not torch.allclose(base(x).logits, biased(x).logits)
    from mi_core.train.mdm import optimizer

    groups = optimizer(biased, TrainConfig()).param_groups  # the bias learns faster than the rest, undecayed
    assert [g["lr_scale"] for g in groups] == [1.0, 30.0] and groups[1]["params"] == [biased.peer_gain]
    assert len(optimizer(base, TrainConfig()).param_groups) == 1


def test_deep_supervision_keeps_the_last_iterations_and_truncates_gradients():
    from mi_core.domains.sudoku.mdm import SudokuMDM

    model = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, loops=5, inject=True))
    x = torch.randint(0, 10, (2, 81))
    out = model(x, keep=3, no_grad=4)
    assert len(out.per_iteration) == 3 and out.per_iteration[-1] is out.logits
    out.per_iteration[1].sum().backward()  # iteration 4 ran without autograd: only the shared head learns from it
    assert model.blocks[0].qkv.weight.grad is None and model.head.weight.grad is not None
    out.logits.sum().backward()
    assert model.blocks[0].qkv.weight.grad is not None
    model.iterations = 8  # more iterations at test time
    assert not torch.allclose(model(x).logits, model(x, iterations=5).logits)
    with pytest.raises(ValueError, match="attention must be one of"):
        SudokuMDMConfig(attention="sparse")


def test_pool_files_grow_in_chunks_and_read_back(tmp_path):
    import gzip

    from mi_core.domains.sudoku.pool import (
        POOL_FILE_CHUNK,
        PoolSpec,
        grow_pool_file,
        load_or_build_pools,
        read_pool_file,
    )

    path = tmp_path / "pool.txt.gz"
    assert grow_pool_file(path, 3, POOL_FILE_CHUNK, 2, log=lambda m: None) == POOL_FILE_CHUNK
    once = read_pool_file(path)
    assert grow_pool_file(path, 3, 2 * POOL_FILE_CHUNK, 2, log=lambda m: None) == 2 * POOL_FILE_CHUNK
    grown = read_pool_file(path)
    assert np.array_equal(grown["puzzles"][:POOL_FILE_CHUNK], once["puzzles"])  # appended, not rebuilt
    for puzzle, solution in grown["puzzles"][:5]:
        assert solve_count(list(puzzle), limit=1)[1] == list(solution)
    (tmp_path / "bad.txt.gz").write_bytes(gzip.compress(b"123 456 7\n"))
    with pytest.raises(ValueError, match="line 1: expected 'puzzle solution grade'"):
        read_pool_file(tmp_path / "bad.txt.gz")
    (tmp_path / "dots.txt.gz").write_bytes(gzip.compress(f"{'.' * 81} {'1' * 81} 3\n".encode()))
    with pytest.raises(ValueError, match="dots.txt.gz line 1: expected 'puzzle solution grade'"):
        read_pool_file(tmp_path / "dots.txt.gz")
    (tmp_path / "plain.txt").write_text("not gzip")
    with pytest.raises(ValueError, match="not a gzip pool file"):
        read_pool_file(tmp_path / "plain.txt")
    with pytest.raises(ValueError, match="pool file not found: .*nope.txt.gz"):
        read_pool_file(tmp_path / "nope.txt.gz")
    # a bad or empty --pool-file is named before the grid pool is built (the grids here cannot be built)
    (tmp_path / "empty.txt").write_bytes(b"")
    spec = PoolSpec(seed=0, grids=10**9, puzzles=0, max_iters=1)
    for bad, says in (("empty.txt", "holds no puzzles"), ("plain.txt", "not a gzip pool file")):
        with pytest.raises(ValueError, match=says):
            load_or_build_pools(spec, tmp_path, puzzle_file=tmp_path / bad, log=lambda m: None)


def test_building_the_pools_says_so_first_and_reading_them_is_quiet(tmp_path):
    """A first run spends minutes building its pools: a line says so before, not after."""
    from mi_core.domains.sudoku.pool import PoolSpec, load_or_build_pools

    spec, said = PoolSpec(seed=0, grids=4, puzzles=0, max_iters=1), []
    assert len(load_or_build_pools(spec, tmp_path, workers=1, log=said.append)["grids"]) == 4
    assert len(said) == 1 and said[0].startswith("building the training pools (4 grids) into ")
    said.clear()
    load_or_build_pools(spec, tmp_path, workers=1, log=said.append)
    assert said == []


def test_a_damaged_pool_cache_is_built_again(tmp_path):
    """A pool cache cut short (a copy of the runs folder stopped, a full disk) stopped every later run with a
    zipfile.BadZipFile traceback; it is said and built again, the same seeded pools."""
    from mi_core.domains.sudoku.pool import PoolSpec, load_or_build_pools

    spec, said = PoolSpec(seed=0, grids=4, puzzles=2, max_iters=1), []
    whole = load_or_build_pools(spec, tmp_path, workers=1, log=said.append)
    cache = next(tmp_path.glob("pool_*.npz"))
    for damage in (cache.read_bytes()[:300], b""):
        cache.write_bytes(damage)
        said.clear()
        again = load_or_build_pools(spec, tmp_path, workers=1, log=said.append)
        assert said[0].startswith(f"note: the pool cache {cache} cannot be read") and said[0].endswith("building it again")
        assert all(np.array_equal(whole[k], again[k]) for k in ("grids", "puzzles", "grades"))


def test_looped_model_ties_weights_and_loads_old_configs(tmp_path):
    from mi_core.domains.sudoku.mdm import SudokuMDM, load_sudoku_mdm, save_sudoku_mdm

    once = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32))
    looped = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=2, n_heads=2, d_ff=32, loops=3))
    assert once.num_params() == looped.num_params(), "loops add depth, not parameters"
    looped.load_state_dict(once.state_dict())
    x = torch.zeros(1, 81, dtype=torch.long)
    assert not torch.allclose(once(x).logits, looped(x).logits)
    save_sudoku_mdm(once, tmp_path / "m.safetensors")
    meta = json.loads((tmp_path / "m.json").read_text())
    del meta["config"]["loops"]  # a config written before loops existed
    (tmp_path / "m.json").write_text(json.dumps(meta))
    assert load_sudoku_mdm(tmp_path / "m.safetensors").cfg.loops == 1


def test_init_loops_a_trained_stack_and_refuses_other_shape_changes(tmp_path):
    main = run_train
    from mi_core.domains.sudoku.mdm import SudokuMDM, load_sudoku_mdm, save_sudoku_mdm

    base = SudokuMDM(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32))
    save_sudoku_mdm(base, tmp_path / "base.safetensors")
    common = ["sudoku", "--init", str(tmp_path / "base.safetensors"), "--steps", "2", "--batch", "8", "--grid-pool", "20",
              "--puzzle-pool", "4", "--max-harden", "5", "--eval-puzzles", "0", "--onpolicy-every", "0",
              "--no-bf16", "--pool-dir", str(tmp_path / "pools"), "--threads", "1"]
    main(common + ["--loops", "2", "--lr", "1e-12", "--out", str(tmp_path / "looped.safetensors")])
    looped = load_sudoku_mdm(tmp_path / "looped.safetensors")
    assert looped.cfg.loops == 2 and looped.cfg.n_layers == 1
    for name, value in base.state_dict().items():  # lr 1e-12: the loaded weights, now applied twice
        assert torch.allclose(looped.state_dict()[name], value, atol=1e-9), name
    main(common[:2] + [str(tmp_path / "looped.safetensors")] + common[3:]
         + ["--loops", "1", "--dropout", "0.1", "--lr", "1e-12", "--out", str(tmp_path / "once.safetensors")])
    once = load_sudoku_mdm(tmp_path / "once.safetensors")  # given with its default value, --loops 1 still applies
    assert (once.cfg.loops, once.cfg.dropout) == (1, 0.1)
    fresh_pools = common[:-4] + ["--pool-dir", str(tmp_path / "new_pools"), "--threads", "1"]
    for option in (["--n-layers", "3"], ["--n-layers", "6"]):  # 6 is the option's default: given, it still clashes
        with pytest.raises(ValueError, match=f"has n_layers 1; --n-layers {option[1]} cannot change it"):
            main(fresh_pools + option + ["--out", str(tmp_path / "deeper.safetensors")])
    assert not (tmp_path / "deeper.safetensors").exists() and not (tmp_path / "new_pools").exists()


def test_pools_do_not_depend_on_the_number_of_workers():
    one = build_graded_pool(5, 6, 5, workers=1, chunk=2)
    two = build_graded_pool(5, 6, 5, workers=2, chunk=2)
    assert np.array_equal(one[0], two[0]) and np.array_equal(one[1], two[1])


def test_resume_takes_the_runs_own_settings(tmp_path):
    main = run_train

    _tiny_run(tmp_path, 8, stop_after=2)
    out = str(tmp_path / "run" / "m.safetensors")
    with pytest.raises(ValueError, match="--lr 0.5 differs"):
        main(["sudoku", "--out", out, "--resume", "--lr", "0.5"])
    with pytest.raises(ValueError, match="--batch 256 differs from its 16"):  # the option's default, given
        main(["sudoku", "--out", out, "--resume", "--batch", "256"])
    with pytest.raises(ValueError, match="no checkpoint"):
        main(["sudoku", "--out", str(tmp_path / "other.safetensors"), "--resume"])


def test_a_resumed_run_keeps_the_record_of_its_init(tmp_path, model_path):
    """A run begun with --init and resumed without it saved JSON saying "init": null (with it, any other file was
    taken without a word and recorded, though the resumed weights are the checkpoint's)."""
    out = tmp_path / "run" / "m.safetensors"
    common = ["sudoku", "--out", str(out), "--batch", "8", "--grid-pool", "30", "--puzzle-pool", "8", "--max-harden",
              "10", "--eval-every", "2", "--eval-puzzles", "0", "--onpolicy-every", "0", "--warmup", "2", "--no-bf16",
              "--threads", "1", "--pool-dir", str(tmp_path / "pools")]
    run_train([*common, "--init", str(model_path), "--steps", "2"])
    assert json.loads(out.with_name("m_last.json").read_text())["init"] == str(model_path)
    run_train([*common, "--resume", "--steps", "4"])
    last = json.loads(out.with_name("m_last.json").read_text())
    assert last["curve"][-1]["step"] == 4 and Path(last["init"]) == model_path
    with pytest.raises(ValueError, match="--init .*other.safetensors differs from its .*tiny.safetensors"):
        run_train([*common, "--resume", "--steps", "6", "--init", str(tmp_path / "other.safetensors")])


def test_a_second_run_of_the_same_out_is_refused_while_the_first_runs(tmp_path):
    """Two runs of one --out started together (the second before the first wrote a file, so the output checks passed)
    both trained to the end, each replacing the other's weights, JSON and checkpoint. A lock left by a process that
    is gone is taken over."""
    import subprocess
    import sys

    out = tmp_path / "run" / "m.safetensors"
    args = ["sudoku", "--out", str(out), "--batch", "8", "--grid-pool", "30", "--puzzle-pool", "8", "--max-harden", "10",
            "--eval-every", "2", "--eval-puzzles", "0", "--onpolicy-every", "0", "--warmup", "2", "--no-bf16",
            "--threads", "1", "--pool-dir", str(tmp_path / "pools"), "--d-model", "16", "--n-layers", "1",
            "--n-heads", "2", "--d-ff", "32", "--steps", "2"]
    lock = out.with_name("m.safetensors.lock")
    lock.parent.mkdir(parents=True)
    lock.write_text(str(os.getpid()))  # a run in progress: this process
    with pytest.raises(ValueError, match=f"another run \\(process {os.getpid()}\\) is writing it"):
        run_train(args)
    assert not out.exists() and lock.read_text() == str(os.getpid())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    lock.write_text(gone.stdout.strip())
    run_train(args)
    assert out.is_file() and not lock.exists()
    fresh = tmp_path / "new" / "deep" / "m.safetensors"  # a run refused after the lock leaves no folder made for it
    with pytest.raises(ValueError, match="--min-loops 2 is more than the model's 1 loops"):
        run_train([*args[:1], "--out", str(fresh), *args[3:], "--min-loops", "2"])
    assert not (tmp_path / "new").exists()


def test_a_checkpoint_with_no_weights_yet_says_how_to_get_them(tmp_path):
    """A run stopped before its first validation (a large --eval-every, with --checkpoint-minutes) leaves m.ckpt and no
    weights: --model m.ckpt said "give the weights file beside it, m.safetensors", a file that is not there, and
    --model m.safetensors "weights file not found"."""
    from mi_core.models.base import ModelFileError, load_meta

    ckpt = tmp_path / "m.ckpt"
    ckpt.write_bytes(b"\x80\x02" + bytes(64))
    with pytest.raises(ModelFileError, match="m.ckpt is a training checkpoint .*no weights beside it yet: its run "
                                             "stopped before its first validation.*add --resume"):
        load_meta(ckpt)
    with pytest.raises(ModelFileError, match="weights file not found: .*m.safetensors .*m.ckpt is there: its run "
                                             "stopped before its first validation"):
        load_meta(tmp_path / "m.safetensors")


def test_resume_refuses_another_clock_and_other_data_files(tmp_path):
    """A resumed run took another --time-budget clock, or other --pool-file, --val-file or --exclude files,
    without a word (a pool of 10,000 puzzles of grade 8 became a fresh one of 4,000 of grade 2)."""
    _tiny_run(tmp_path, 8, stop_after=2)
    out = str(tmp_path / "run" / "m.safetensors")
    with pytest.raises(ValueError, match="counts wall seconds: leave out --cpu-clock"):
        run_train(["sudoku", "--out", out, "--resume", "--cpu-clock"])
    held_out = tmp_path / "eval.txt"
    held_out.write_text(".......1.4.........2...........5.4.7..8...3....1.9....3..4..2...5.1........8.6...\n")
    with pytest.raises(ValueError, match="this run was trained with other --exclude files than these"):
        run_train(["sudoku", "--out", out, "--resume", "--exclude", str(held_out), "--pool-dir",
                   str(tmp_path / "pools"), "--threads", "1"])


def test_data_files_are_checked_before_the_pools_are_built(tmp_path, monkeypatch):
    """A missing --val-file, or a resumed run given other --exclude files, was found only after the pools were built
    (minutes when they are not cached)."""
    from mi_core.domains.sudoku import train as sudoku_train

    _tiny_run(tmp_path, 8, stop_after=2)
    out = str(tmp_path / "run" / "m.safetensors")
    monkeypatch.setattr(sudoku_train, "load_or_build_pools", lambda *a, **k: pytest.fail("the pools were built first"))
    fresh = ["sudoku", "--out", str(tmp_path / "new.safetensors"), "--pool-dir", str(tmp_path / "pools"), "--steps",
             "2", "--batch", "8", "--eval-puzzles", "1", "--no-bf16", "--threads", "1"]
    with pytest.raises(ValueError, match=f"--val-file not found: {tmp_path / 'val.txt'}"):
        run_train([*fresh, "--val-file", str(tmp_path / "val.txt")])
    with pytest.raises(ValueError, match=f"--exclude {tmp_path} is a folder"):
        run_train([*fresh, "--exclude", str(tmp_path)])
    with pytest.raises(ValueError, match="--pool-file not found"):
        run_train(["sudoku", "--out", out, "--resume", "--pool-file", str(tmp_path / "pool.txt"), "--threads", "1"])
    held_out = tmp_path / "eval.txt"
    held_out.write_text(".......1.4.........2...........5.4.7..8...3....1.9....3..4..2...5.1........8.6...\n")
    with pytest.raises(ValueError, match="this run was trained with other --exclude files than these"):
        run_train(["sudoku", "--out", out, "--resume", "--exclude", str(held_out), "--threads", "1"])


def test_resume_reads_the_pools_of_the_runs_own_pool_dir(tmp_path, monkeypatch, capsys):
    """A resumed run with no --pool-dir read (or built anew) the pools of the default folder, not those of the one
    the run started with; a --pool-dir given on resume still wins, and is said when it is not the run's own."""
    from mi_core.domains.sudoku import train as sudoku_train

    _tiny_run(tmp_path, 6, stop_after=2)  # its pools in tmp_path / "pools"
    out = str(tmp_path / "run" / "m.safetensors")
    assert torch.load(checkpoint_path(Path(out)), weights_only=True)["task"]["pool_dir"] == str(tmp_path / "pools")
    roots = []
    build = sudoku_train.load_or_build_pools
    monkeypatch.setattr(sudoku_train, "load_or_build_pools", lambda spec, root, **k: roots.append(root) or build(
        spec, root=root, **k))
    monkeypatch.chdir(tmp_path / "run")  # where the default runs/pools would be
    run_train(["sudoku", "--out", out, "--resume", "--steps", "4", "--threads", "1"])
    assert roots == [tmp_path / "pools"] and not (tmp_path / "run" / "runs").exists()
    assert "note: --pool-dir" not in capsys.readouterr().out
    run_train(["sudoku", "--out", out, "--resume", "--steps", "6", "--pool-dir", "other", "--threads", "1"])
    assert roots[-1] == Path("other") and (tmp_path / "run" / "other").is_dir()
    assert f"note: --pool-dir other is not this run's own {tmp_path / 'pools'}" in capsys.readouterr().out
    state = torch.load(checkpoint_path(Path(out)), weights_only=True)
    assert state["step"] == 6 and state["task"]["pool_dir"] == str(tmp_path / "run" / "other")


def test_resume_without_the_cpu_clock_of_a_cpu_clock_run_is_refused(tmp_path):
    cfg = TrainConfig(steps=8, batch=16, grid_pool=30, puzzle_pool=8, max_harden=10, eval_every=4, log_every=1,
                      eval_puzzles=0, onpolicy_every=0, warmup=2, bf16=False)
    task = SudokuTask(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32), cfg, torch.device("cpu"),
                      log=lambda m: None, pool_dir=tmp_path / "pools")
    out = tmp_path / "m.safetensors"
    train(task, out, torch.device("cpu"), log=lambda m: None, stop_after=2, cpu_clock=True)
    with pytest.raises(ValueError, match="counts CPU seconds: give --cpu-clock"):
        run_train(["sudoku", "--out", str(out), "--resume"])


def test_a_checkpoint_counts_the_cpu_seconds_of_the_validation_before_it(tmp_path, monkeypatch):
    """The checkpoint took the clock before the validation it follows: a resumed run lost those seconds."""
    import time

    def busy(self, model):
        start = time.process_time()
        while time.process_time() - start < 0.3:
            pass
        return {}

    monkeypatch.setattr(SudokuTask, "validate", busy)
    _tiny_run(tmp_path, 8, stop_after=4)  # a validation at step 4, then the checkpoint
    state = torch.load(checkpoint_path(tmp_path / "run" / "m.safetensors"), weights_only=True)
    assert state["cpu_seconds"] >= json.loads(state["curve"])[-1]["cpu_seconds"] + 0.25


def test_resume_refuses_the_checkpoint_of_another_domain(tmp_path):
    """``train sudoku --resume`` on a protein run's checkpoint ended in a TypeError's traceback."""
    from mi_core.domains.protein.mdm import ProteinMDMConfig
    from mi_core.domains.protein.train import ProteinTask
    from mi_core.train.sequences import SequenceTrainConfig

    fasta = tmp_path / "train.fa"
    fasta.write_text("".join(f">d{i}\n{'ACDEFGHIKLMNPQRSTVWY'[i % 20:] * 2}\n" for i in range(40)))
    cfg = SequenceTrainConfig(steps=4, batch=4, eval_every=2, log_every=1, eval_sequences=4, min_len=10, warmup=1,
                              bf16=False)
    task = ProteinTask(ProteinMDMConfig(max_len=64, d_model=16, n_layers=1, n_heads=2, d_ff=32), cfg,
                       torch.device("cpu"), {"fasta": fasta}, log=lambda m: None)
    out = tmp_path / "p.safetensors"
    train(task, out, torch.device("cpu"), log=lambda m: None, stop_after=2)
    with pytest.raises(ValueError, match="is the checkpoint of a protein_mdm run, not of sudoku_mdm"):
        run_train(["sudoku", "--out", str(out), "--resume"])
    state = torch.load(checkpoint_path(out), weights_only=True)
    del state["trainer"]  # a checkpoint written before runs recorded their task
    torch.save(state, checkpoint_path(out))
    with pytest.raises(ValueError, match=r"holds a model with settings sudoku_mdm does not take \(max_len, positions\)"):
        run_train(["sudoku", "--out", str(out), "--resume"])


def test_resume_with_an_init_the_run_had_not_names_its_none(tmp_path):
    """``train protein --resume --init X`` of a run begun without --init said "--init X differs from its " (nothing)."""
    from mi_core.domains.protein.mdm import ProteinMDMConfig
    from mi_core.domains.protein.train import ProteinTask
    from mi_core.train.mdm import resume_configs
    from mi_core.train.sequences import SequenceTrainConfig

    fasta = tmp_path / "train.fa"
    fasta.write_text("".join(f">d{i}\n{'ACDEFGHIKLMNPQRSTVWY'[i % 20:] * 2}\n" for i in range(40)))
    cfg = SequenceTrainConfig(steps=4, batch=4, eval_every=2, log_every=1, eval_sequences=4, min_len=10, warmup=1,
                              bf16=False)
    task = ProteinTask(ProteinMDMConfig(max_len=64, d_model=16, n_layers=1, n_heads=2, d_ff=32), cfg,
                       torch.device("cpu"), {"fasta": fasta}, log=lambda m: None)
    out = tmp_path / "p.safetensors"
    train(task, out, torch.device("cpu"), log=lambda m: None, stop_after=2)
    with pytest.raises(ValueError, match=r"--init w.safetensors differs from its none \(it was left out\)$"):
        resume_configs(ProteinTask, out, {"init": "w.safetensors"})


def test_onpolicy_extra_state_is_the_last_consistent_one(tiny_mdm):
    pairs, _ = build_graded_pool(2, 3, 0, workers=1)
    puzzles, solutions = torch.as_tensor(pairs[:, 0]), torch.as_tensor(pairs[:, 1])
    states, sols, solved = onpolicy_states(tiny_mdm, puzzles, solutions, 1, torch.Generator().manual_seed(0), bf16=False)
    # per puzzle: one sampled state, then the state before the first error, the most filled of its path
    for m in range(3):
        sampled, last = states[2 * m], states[2 * m + 1]
        assert (last != 0).sum() >= (sampled != 0).sum() and (last != 0).sum() >= (puzzles[m] != 0).sum()
        assert ((last == 0) | (last == sols[2 * m + 1])).all()


def test_batch_shares_never_go_negative():
    rng = random.Random(0)
    grids = np.array([random_grid(rng) for _ in range(4)])
    pairs, grades = build_graded_pool(0, 2, 0, workers=1)
    data = DeviceBatches({"grids": grids, "puzzles": pairs, "grades": grades}, "cpu", 0.5, 0.5, 1.0, capacity=4)
    data.add_states(torch.as_tensor(pairs[:, 0]), torch.as_tensor(pairs[:, 1]))
    inputs, _ = data.sample(3, torch.Generator().manual_seed(0))
    assert inputs.shape == (3, 81)


def test_protein_resume_gives_the_same_weights(tmp_path):
    """The shared loop resumes the protein task too: a run stopped after 3 steps and resumed ends with the same
    weights and loss curve as one run straight through."""
    import numpy as np
    from safetensors.torch import load_file

    from mi_core.domains.protein.mdm import ProteinMDMConfig
    from mi_core.domains.protein.train import ProteinTask
    from mi_core.train.sequences import SequenceTrainConfig as ProteinTrainConfig

    rng = np.random.default_rng(0)
    fasta = tmp_path / "train.fa"
    fasta.write_text("".join(f">d{i}\n{''.join(rng.choice(list('ACDEFGHIKLMNPQRSTVWY'), 20 + i % 30))}\n"
                             for i in range(120)))
    mcfg = ProteinMDMConfig(max_len=64, d_model=16, n_layers=1, n_heads=2, d_ff=32, dropout=0.1)
    cfg = ProteinTrainConfig(steps=8, batch=4, eval_every=4, log_every=1, eval_sequences=4, min_len=10, warmup=1,
                             bf16=False)
    cpu = torch.device("cpu")

    def run(name, stop_after=0, resume=False, data=fasta):
        task = ProteinTask(mcfg, cfg, cpu, {"fasta": data}, log=lambda m: None)
        return train(task, tmp_path / name / "m.safetensors", cpu, log=lambda m: None, resume=resume,
                     stop_after=stop_after)

    whole = run("a")
    assert run("b", stop_after=3)["step"] == 3
    other = tmp_path / "other.fa"
    other.write_text(fasta.read_text().replace(">d0\n", ">d0\nMK"))
    with pytest.raises(ValueError, match="not those this run was trained on"):
        run("b", resume=True, data=other)
    rest = run("b", resume=True)
    assert [p["train_loss"] for p in rest["curve"]] == pytest.approx([p["train_loss"] for p in whole["curve"]], rel=1e-6)
    a, b = (load_file(tmp_path / n / "m_last.safetensors") for n in ("a", "b"))
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_trainer_uses_bf16_only_where_it_is_fast(monkeypatch):
    import mi_core.device as dev

    cpu, notes = torch.device("cpu"), []
    monkeypatch.setattr(dev, "slow_bf16", lambda device: "warning: emulated bf16")
    assert dev.use_bf16(TrainConfig(bf16=True).bf16, cpu, notes.append) is False
    assert notes == ["warning: emulated bf16: training in fp32"]
    monkeypatch.setattr(dev, "slow_bf16", lambda device: None)  # CUDA, or a CPU with native bf16
    assert dev.use_bf16(TrainConfig(bf16=True).bf16, cpu) is True
    assert dev.use_bf16(TrainConfig(bf16=False).bf16, cpu) is False


@pytest.mark.parametrize("field, value", [("ema", 1.0), ("batch", 0), ("puzzle_frac", 1.5), ("supervise", 0)])
def test_train_config_refuses_values_outside_the_declared_ranges(field, value):
    with pytest.raises(ValueError, match=f"{field}: {value} is outside"):
        TrainConfig(**{field: value})
    with pytest.raises(ValueError, match="puzzle_frac \\+ onpolicy_frac"):
        TrainConfig(puzzle_frac=0.9, onpolicy_frac=0.2)
    with pytest.raises(ValueError, match="--supervise 4 is more than --grad-iters 2"):  # it averaged over 2
        TrainConfig(supervise=4, grad_iters=2)
    assert TrainConfig(supervise=4, grad_iters=0).supervise == 4  # 0: every iteration carries gradients


def test_distillation_mixes_the_solution_with_the_teachers_views(tmp_path):
    from mi_core.domains.sudoku.mdm import SudokuMDM, save_sudoku_mdm

    torch.manual_seed(0)
    shape = SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32)
    teacher = SudokuMDM(shape).eval()
    save_sudoku_mdm(teacher, tmp_path / "teacher.safetensors")
    cfg = TrainConfig(steps=2, batch=8, grid_pool=20, puzzle_pool=4, max_harden=5, eval_puzzles=0, onpolicy_every=0,
                      bf16=False)
    for views in (1, 3):
        task = SudokuTask(shape, cfg, torch.device("cpu"), log=lambda m: None, pool_dir=tmp_path / "pools",
                          args={"teacher": tmp_path / "teacher.safetensors", "teacher_views": views, "distill": 0.25})
        inputs, values, scored = task.batch()
        targets = task.soft_targets(inputs, values)
        assert targets.shape == (8, 81, 9) and torch.allclose(targets.sum(-1), torch.ones(8, 81))
        solution = torch.nn.functional.one_hot(values, 9).float()
        teacher_part = (targets - 0.75 * solution) / 0.25
        assert teacher_part.min() >= -1e-6
        with torch.no_grad():
            alone = teacher(inputs).logits.softmax(-1)
        # one view: the teacher as it is; three: an average over other views, which differs from it
        assert torch.allclose(teacher_part, alone, atol=1e-5) == (views == 1)
    state = task.state_dict()  # a checkpoint of the distilling run: resumed without its teacher, it says so
    plain = SudokuTask(shape, cfg, torch.device("cpu"), log=lambda m: None, pool_dir=tmp_path / "pools")
    with pytest.raises(ValueError, match="--resume: this run distils"):
        plain.load_state_dict(state, 2)
    task.load_state_dict(state, 2)
    out = tmp_path / "student.safetensors"
    run_train(["sudoku", "--steps", "2", "--batch", "8", "--grid-pool", "20", "--puzzle-pool", "4", "--max-harden", "5",
               "--eval-puzzles", "0", "--onpolicy-every", "0", "--no-bf16", "--pool-dir", str(tmp_path / "pools"),
               "--threads", "1", "--d-model", "16", "--n-layers", "1", "--n-heads", "2", "--d-ff", "32",
               "--teacher", str(tmp_path / "teacher.safetensors"), "--distill", "0.25", "--out", str(out)])
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["teacher"] == {"path": str(tmp_path / "teacher.safetensors"), "views": 4, "share": 0.25}
    # the teacher trained again under its name since: a resumed run distilled from another model without a word
    args = {"teacher": tmp_path / "teacher.safetensors", "teacher_views": 4, "distill": 0.25}
    state = SudokuTask(shape, cfg, torch.device("cpu"), log=lambda m: None, pool_dir=tmp_path / "pools",
                       args=args).state_dict()
    torch.manual_seed(1)
    save_sudoku_mdm(SudokuMDM(shape).eval(), tmp_path / "teacher.safetensors")
    again = SudokuTask(shape, cfg, torch.device("cpu"), log=lambda m: None, pool_dir=tmp_path / "pools", args=args)
    with pytest.raises(ValueError, match="this run was trained with other --teacher files than these"):
        again.load_state_dict(state, 2)


def test_a_pool_file_cut_off_mid_chunk_grows_into_the_file_a_whole_build_writes(tmp_path):
    """A build stopped while appending leaves a cut gzip member; resuming drops it (appending after it made the
    file unreadable from that chunk on)."""
    from mi_core.domains.sudoku.pool import POOL_FILE_CHUNK, grow_pool_file, read_pool_file

    quiet = lambda m: None  # noqa: E731
    whole = tmp_path / "whole.txt.gz"
    grow_pool_file(whole, 4, 3 * POOL_FILE_CHUNK, 0, log=quiet)
    grow_pool_file(tmp_path / "two.txt.gz", 4, 2 * POOL_FILE_CHUNK, 0, log=quiet)
    data = (tmp_path / "two.txt.gz").read_bytes()
    for cut, kept in ((4, 2), (300, 1)):  # in the second chunk's trailer (its lines all read), and in its lines
        path = tmp_path / f"cut{cut}.txt.gz"
        path.write_bytes(data[:-cut])
        assert len(read_pool_file(path)["grades"]) == kept * POOL_FILE_CHUNK
        assert grow_pool_file(path, 4, 3 * POOL_FILE_CHUNK, 0, log=quiet) == 3 * POOL_FILE_CHUNK
        for key, value in read_pool_file(whole).items():
            assert np.array_equal(read_pool_file(path)[key], value)


def _init_task(tmp_path, init_cfg, **extra):
    from mi_core.domains.sudoku.mdm import SudokuMDM, save_sudoku_mdm

    torch.manual_seed(0)
    path = tmp_path / "init.safetensors"
    save_sudoku_mdm(SudokuMDM(init_cfg), path)
    cfg = TrainConfig(batch=8, grid_pool=20, puzzle_pool=4, max_harden=5, eval_puzzles=0, onpolicy_every=0,
                      bf16=False, **extra)
    return SudokuTask(SudokuMDMConfig(), cfg, torch.device("cpu"), {"init": path, "pool_workers": 1},
                      log=lambda m: None, pool_dir=tmp_path / "pools")


def test_init_trains_the_files_own_loops(tmp_path):
    """``--init`` of a looped model without ``--loops`` trained it at one iteration a step (the option's default)
    while validating and saving it at its own 3 (24 for the shipped default); a --resume then trained at 3."""
    from mi_core.domains.sudoku.mdm import masked_ce

    task = _init_task(tmp_path, SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, loops=3))
    model = task.build_model()
    assert task.model_cfg == model.cfg and model.cfg.loops == 3
    inputs, values, scored = task.batch()
    with torch.no_grad():
        assert task.loss(model, inputs, values, scored).item() == pytest.approx(
            masked_ce(model(inputs).logits, values, scored).item(), rel=1e-6)


def test_init_of_a_4x4_model_is_refused_before_the_pools(tmp_path):
    """A 4x4 ``--init`` built the pools (minutes) and then stopped at the first step on 'sequence of 81 positions
    is longer than the 16 this model takes'."""
    with pytest.raises(ValueError, match="init.safetensors holds a 4x4 model: train sudoku trains 9x9 grids"):
        _init_task(tmp_path, SudokuMDMConfig(box=2, d_model=16, n_layers=1, n_heads=2, d_ff=32))
    assert not (tmp_path / "pools").exists()


def test_min_loops_above_the_models_loops_is_refused(tmp_path):
    """``--min-loops 8 --loops 2`` trained at 2 iterations a step without a word."""
    with pytest.raises(ValueError, match="--min-loops 8 is more than the model's 2 loops"):
        _init_task(tmp_path, SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, loops=2), min_loops=8)
    assert _init_task(tmp_path, SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32, loops=2),
                      min_loops=2).cfg.min_loops == 2


def test_resume_of_a_cut_or_foreign_checkpoint_is_one_error(tmp_path):
    """``--resume`` on a checkpoint cut short (a copy stopped halfway), emptied or of another program ended in a
    traceback (OSError, EOFError, KeyError 'model_cfg')."""
    _tiny_run(tmp_path, 8, stop_after=2)
    out = tmp_path / "run" / "m.safetensors"
    ckpt = checkpoint_path(out)
    whole = ckpt.read_bytes()
    for data in (whole[: len(whole) // 2], b"", b"garbage\n"):
        ckpt.write_bytes(data)
        with pytest.raises(ValueError, match=r"m\.ckpt is not a readable checkpoint \(torch\.load: .+\): a run writes"):
            run_train(["sudoku", "--out", str(out), "--resume"])
    torch.save({"weights": torch.zeros(2)}, ckpt)
    with pytest.raises(ValueError, match=r"m\.ckpt is not a checkpoint of this trainer \(it has no model, opt"):
        run_train(["sudoku", "--out", str(out), "--resume"])


def test_the_cached_pool_does_not_keep_the_first_runs_exclusions(tmp_path):
    """The cache was written after ``--exclude`` dropped puzzles, so every later run with the same spec trained on
    the pool less the first run's evaluation puzzles, whatever its own ``--exclude``."""
    from mi_core.domains.sudoku.pool import PoolSpec, load_or_build_pools

    spec = PoolSpec(11, 20, 6, 5)
    pairs, _ = build_graded_pool(spec.seed + 1, spec.puzzles, spec.max_iters, workers=1)
    first = "".join(map(str, pairs[0, 0]))
    quiet = lambda m: None  # noqa: E731
    excluded = load_or_build_pools(spec, tmp_path, 1, exclude={first}, log=quiet)
    assert len(excluded["puzzles"]) == 5
    plain = load_or_build_pools(spec, tmp_path, 1, log=quiet)  # read from the cache
    assert np.array_equal(plain["puzzles"], pairs) and len(plain["grades"]) == 6


def test_exclude_files_drop_their_puzzles_from_the_pool(tmp_path):
    """``--exclude`` files are read as the pool writes puzzles (0 for blank), whether the file writes '.' or '0'."""
    from mi_core.domains.sudoku import to_string
    from mi_core.domains.sudoku.pool import PoolSpec, load_or_build_pools
    from mi_core.domains.sudoku.train import _read_exclude

    spec = PoolSpec(11, 20, 6, 5)
    pairs, _ = build_graded_pool(spec.seed + 1, spec.puzzles, spec.max_iters, workers=1)
    dots, zeros = tmp_path / "dots.txt", tmp_path / "zeros.csv"
    dots.write_text(to_string(pairs[0, 0]) + "\n")
    zeros.write_text("puzzle\n" + to_string(pairs[1, 0], blank="0") + "\n")
    exclude = _read_exclude([dots, zeros])
    assert exclude == {"".join(map(str, pairs[i, 0])) for i in (0, 1)}
    kept = load_or_build_pools(spec, tmp_path, 1, exclude=exclude, log=lambda m: None)
    assert np.array_equal(kept["puzzles"], pairs[2:])


def test_validation_puzzles_are_never_trained_on(tmp_path):
    """``--val-file`` naming the ``--pool-file`` (its hardest puzzles validate) trained on every validation puzzle,
    and the best weights were picked on puzzles seen in training."""
    from mi_core.domains.sudoku.pool import POOL_FILE_CHUNK, grow_pool_file

    pool = tmp_path / "pool.txt.gz"
    grow_pool_file(pool, 3, POOL_FILE_CHUNK, 0, log=lambda m: None)
    shape = SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32)
    lines = []
    for held in (10, POOL_FILE_CHUNK):
        cfg = TrainConfig(batch=8, grid_pool=20, eval_puzzles=held, onpolicy_every=0, bf16=False)
        make = lambda: SudokuTask(shape, cfg, torch.device("cpu"), {"pool_file": pool, "val_file": pool},  # noqa: E731
                                  log=lines.append, pool_dir=tmp_path / "pools")
        if held == POOL_FILE_CHUNK:
            with pytest.raises(ValueError, match="every puzzle of --pool-file .* is a validation puzzle"):
                make()
            continue
        task = make()
        trained = {p.numpy().tobytes() for p in task.data.puzzles}
        assert len(task.val) == 10 and len(trained) == POOL_FILE_CHUNK - 10
        assert not any(p.tobytes() in trained for p in task.val[:, 0])
        assert any("dropped 10 puzzles of --pool-file" in line for line in lines)


def test_a_timed_run_stops_at_steps_and_the_help_says_so(tmp_path):
    """``--steps`` read "the cosine schedule's length, unless --time-budget", yet a run of ``--time-budget 3600``
    stopped at the default 20,000 steps."""
    from mi_core.options import spec_of
    from mi_core.train.sequences import SequenceTrainConfig

    cfg = TrainConfig(steps=3, time_budget=3600, batch=8, grid_pool=20, puzzle_pool=4, max_harden=5, eval_puzzles=0,
                      onpolicy_every=0, warmup=1, bf16=False)
    task = SudokuTask(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32), cfg, torch.device("cpu"),
                      log=lambda m: None, pool_dir=tmp_path / "pools")
    assert train(task, tmp_path / "m.safetensors", torch.device("cpu"), log=lambda m: None)["step"] == 3
    for config in (TrainConfig, SequenceTrainConfig):
        fields = {f.name: spec_of(f).help for f in config.__dataclass_fields__.values()}
        assert "whichever comes first" in fields["steps"] and "or at --steps if sooner" in fields["time_budget"]


def test_a_budget_spent_while_a_step_is_logged_still_ends_validated(tmp_path, monkeypatch):
    """The loop read the clock twice a step: a budget that ran out between the two (while a step was logged) ended
    the run unvalidated, without the weights or checkpoint of its steps since the last validation (none here)."""
    import time as real_time
    import types

    import mi_core.train.mdm as trainer

    now = [1000.0]
    monkeypatch.setattr(trainer, "time", types.SimpleNamespace(time=lambda: now[0], process_time=real_time.process_time))
    cfg = TrainConfig(steps=10**6, time_budget=100, batch=8, grid_pool=20, puzzle_pool=4, max_harden=5, eval_puzzles=2,
                      eval_every=2, log_every=1, onpolicy_every=0, warmup=1, bf16=False)
    for spent_at, eval_every, last in ((3, 1000, 4), (2, 2, 2)):  # logging step 3 / validating step 2 spends it
        task = SudokuTask(SudokuMDMConfig(d_model=16, n_layers=1, n_heads=2, d_ff=32),
                          dataclasses.replace(cfg, eval_every=eval_every), torch.device("cpu"), log=lambda m: None,
                          pool_dir=tmp_path / "pools")
        point, calls = task.point, []

        def spend(point=point, calls=calls, spent_at=spent_at):
            calls.append(1)
            now[0] += 1000 if len(calls) == spent_at else 1
            return point()

        task.point = spend
        out = tmp_path / f"m{spent_at}.safetensors"
        result = trainer.train(task, out, torch.device("cpu"), log=lambda m: None)
        assert result["step"] == last and "val_accuracy" in result["curve"][-1]
        assert out.is_file() and torch.load(checkpoint_path(out), weights_only=True)["step"] == last


def test_the_help_names_every_option_a_warm_start_may_change():
    """``train sudoku --help`` said only --loops and --dropout may differ from the ``--init`` file's."""
    import mi_core.domains.sudoku.train as sudoku_train

    doc = " ".join(sudoku_train.__doc__.split())
    assert all(f"``--{name}``" in doc for name in sudoku_train.INIT_OVERRIDES)


def test_the_readme_resume_line_names_the_data_files_of_the_run_it_continues():
    """README's "train sudoku --out X --resume" left out the --exclude of the run it continues (started just above
    it), and a resumed run refuses other data files ("left out counts as other"): the line as printed failed."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "README.md").read_text().replace("\\\n", " ")
    lines = [ln.split() for ln in text.splitlines() if "python -m mi_core train sudoku" in ln]
    resumed = [ln for ln in lines if "--resume" in ln]
    assert resumed
    for line in resumed:
        out = line[line.index("--out") + 1]
        started = next(ln for ln in lines if "--resume" not in ln and "--out" in ln and ln[ln.index("--out") + 1] == out)
        files = [f"{a} {b}" for a, b in zip(started, started[1:]) if re.fullmatch(r"--(exclude|pool-file|val-file|teacher)", a)]
        assert all(f in " ".join(line) for f in files), (files, line)
