"""Inputs for the MI-guided selection checks: entropies, MI and masks from the exact 4x4 oracle and from the
shipped Sudoku MDM + estimator on seeded random states, and the parameter grid. Recorded picks of the
implementation before vectorisation live in ``tests/fixtures/mi_greedy_picks.json``
(regenerate with ``python -m tests.mi_greedy_cases``, only when the selection rule is meant to change)."""

import json
import random
from pathlib import Path

import torch

PICKS = Path(__file__).parent / "fixtures" / "mi_greedy_picks.json"
PARAMS = [(g, lam, rel) for g in (0.3, 1.0, 4.0) for lam in (0.0, 1.0, 8.0) for rel in (False, True)]
SUDOKU_MODEL, SUDOKU_ESTIMATOR = Path("assets/sudoku_mdm.safetensors"), Path("assets/sudoku_mi_estimator.safetensors")


def oracle_inputs(count: int = 24, seed: int = 0):
    """``(entropy (B, 16), mi (B, 16, 16), masked (B, 16))`` float64 exact values of random 4x4 states."""
    from mi_core.domains.oracle4 import Oracle4Model, all_solutions4, exact_pair_mi

    rng = random.Random(seed)
    sols = all_solutions4()
    rows = []
    for _ in range(count):
        t = sols[rng.randrange(len(sols))].clone()
        t[rng.sample(range(16), rng.randint(1, 16))] = 0
        rows.append(t)
    tokens = torch.stack(rows)
    probs = Oracle4Model()(tokens).logits.double().softmax(-1)
    masked = tokens == 0
    entropy = -torch.special.xlogy(probs, probs).sum(-1) * masked
    mi = torch.stack([exact_pair_mi(t) for t in tokens]).double()
    return entropy, mi, masked


def sudoku_inputs(count: int = 16, seed: int = 0):
    """The same from the shipped Sudoku MDM and estimator (float32 as the decode loop has them)."""
    from mi_core.domains.sudoku.bench_probe import random_states
    from mi_core.domains.sudoku.mdm import load_sudoku_mdm
    from mi_core.mi.estimator import estimate_mi, load_estimator

    model, est = load_sudoku_mdm(SUDOKU_MODEL), load_estimator(SUDOKU_ESTIMATOR, "cpu")
    rng = random.Random(seed)
    tokens = torch.stack([random_states(81, rng.randint(2, 81), 1, seed + k, "cpu")[0] for k in range(count)])
    with torch.no_grad():
        e = estimate_mi(model, est, tokens)
    return e.entropy, e.mi, e.masked


def select(entropy, mi, masked, gamma, lam, relative):
    """``(B, N)`` bool picks of the ``mi`` strategy's selection rule at these parameters."""
    from types import SimpleNamespace

    from mi_core.decoding import make_strategy

    strategy = make_strategy("mi", gamma=gamma, lam=lam, relative=relative, mi_fn=lambda ctx: mi)
    return strategy.select(SimpleNamespace(entropy=entropy, masked=masked, info={}))


def record() -> dict:
    out = {}
    for name, inputs in (("oracle", oracle_inputs()), ("sudoku", sudoku_inputs())):
        out[name] = {f"{g}/{lam}/{int(rel)}": [row.nonzero().flatten().tolist() for row in select(*inputs, g, lam, rel)]
                     for g, lam, rel in PARAMS}
    return out


if __name__ == "__main__":
    torch.set_num_threads(1)
    PICKS.write_text(json.dumps(record()) + "\n")
    print(f"wrote {PICKS}")
