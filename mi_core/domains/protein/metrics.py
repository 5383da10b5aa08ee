"""How close generated protein sequences are to a reference set: compositions, Jensen-Shannon divergence
and pairwise identity, over token arrays (only the 20 amino acids 1..20 are counted)."""

from __future__ import annotations

import numpy as np

from mi_core.bench.metrics import pass_stats
from mi_core.domains.protein.tokens import AMINO_ACIDS, MASK_ID

N_AA = len(AMINO_ACIDS)


def _known(tokens) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(tokens, dtype=np.int64)
    return t - 1, (t >= 1) & (t <= N_AA)


def aa_composition(seqs) -> np.ndarray:
    """``(20,)`` float64 counts of each amino acid over all sequences."""
    counts = np.zeros(N_AA)
    for tokens in seqs:
        values, known = _known(tokens)
        counts += np.bincount(values[known], minlength=N_AA)
    return counts


def dipeptide_composition(seqs) -> np.ndarray:
    """``(400,)`` float64 counts of adjacent pairs (a, b) at index ``20 a + b``, both residues known."""
    counts = np.zeros(N_AA * N_AA)
    for tokens in seqs:
        values, known = _known(tokens)
        both = known[:-1] & known[1:]
        counts += np.bincount(values[:-1][both] * N_AA + values[1:][both], minlength=N_AA * N_AA)
    return counts


def jsd(p, q) -> float:
    """Jensen-Shannon divergence in bits, in [0, 1], of two count or probability vectors of one shape
    (scipy's ``jensenshannon`` is the distance: squared here)."""
    p, q = np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64)
    if p.shape != q.shape:
        raise ValueError(f"jsd: distributions of different shapes {p.shape} and {q.shape}")
    if (p < 0).any() or (q < 0).any():
        raise ValueError("jsd: negative counts")
    if p.sum() <= 0 or q.sum() <= 0:
        raise ValueError("jsd: an empty distribution (no known residues to count)")
    with np.errstate(invalid="ignore"):  # scipy takes the sqrt of a divergence that rounding can make -1e-17
        from scipy.spatial.distance import jensenshannon  # scipy loads only when a metric is computed

        distance = jensenshannon(p, q, base=2)
    return 0.0 if np.isnan(distance) else float(min(1.0, distance**2))


def jsd_aa(generated, reference) -> float:
    return jsd(aa_composition(generated), aa_composition(reference))


def jsd_dipeptide(generated, reference) -> float:
    return jsd(dipeptide_composition(generated), dipeptide_composition(reference))


def floor_split(reference, lengths, seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """A seeded sample of ``reference`` cut to ``lengths``, and the reference without it: the JSD between the two
    is the floor a set of those lengths reaches by sampling noise alone. The sample is left out of what it is
    compared with (a sample of the reference against the whole reference reads low: 27% of a 1,116-sequence
    reference is in a 300-sequence sample). Each length takes a sequence at least as long while one is left,
    else the longest left. A reference of fewer than twice as many sequences as ``lengths`` is cut in two random
    halves: the sample is drawn from one, with replacement, and compared with the other. Both empty for fewer
    than 2 sequences."""
    if len(reference) < 2:
        return [], []
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(reference)).tolist()
    spare = len(reference) >= 2 * len(lengths)
    pool = order if spare else order[: len(order) // 2]
    picks: dict[int, int] = {}  # place in lengths -> reference index
    used: set[int] = set()
    for k in sorted(range(len(lengths)), key=lambda k: -lengths[k]):  # the longest first, while long ones are left
        free = [i for i in pool if i not in used]
        long_enough = [i for i in free if len(reference[i]) >= lengths[k]]
        if not long_enough:
            picks[k] = max(free, key=lambda i: len(reference[i]))
        else:  # the pool is in a random order: its first is a random draw, as is a choice with replacement
            picks[k] = long_enough[0] if spare else long_enough[int(rng.integers(len(long_enough)))]
        if spare:
            used.add(picks[k])
    taken = used if spare else set(pool)
    sample = [np.asarray(reference[picks[k]])[:n] for k, n in enumerate(lengths)]
    return sample, [np.asarray(reference[i]) for i in order if i not in taken]


def identity(a, b) -> float:
    """The share of the first ``min(len a, len b)`` positions where both hold the same known residue."""
    m = min(len(a), len(b))
    if m == 0:
        return 0.0
    x, y = np.asarray(a[:m]), np.asarray(b[:m])
    return float(((x == y) & (x != MASK_ID) & (x <= N_AA)).sum() / m)


def mean_pairwise_identity(seqs, max_pairs: int = 2000, seed: int = 0) -> tuple[float, int]:
    """Mean :func:`identity` over all pairs of ``seqs`` (over ``max_pairs`` seeded random pairs when there are
    more) and the number of pairs; NaN for fewer than two sequences."""
    n = len(seqs)
    if n < 2:
        return float("nan"), 0
    if n * (n - 1) // 2 <= max_pairs:
        pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    else:
        rng = np.random.default_rng(seed)
        i = rng.integers(0, n, size=max_pairs)
        j = (i + rng.integers(1, n, size=max_pairs)) % n  # j != i
        pairs = zip(i.tolist(), j.tolist())
    values = [identity(seqs[i], seqs[j]) for i, j in pairs]
    return float(np.mean(values)), len(values)


def unique_fraction(seqs) -> float:
    """Fraction of the sequences that are distinct."""
    if not seqs:
        return float("nan")
    return len({np.asarray(s).tobytes() for s in seqs}) / len(seqs)


def diversity(generated, reference=None, max_pairs: int = 2000, seed: int = 0) -> dict:
    """``mean_identity`` (unaligned: unrelated sequences score ~0.06), ``pairs``, ``unique_fraction`` and, with
    ``reference``, ``reference_mean_identity`` and ``reference_pairs``."""
    mean, pairs = mean_pairwise_identity(generated, max_pairs, seed)
    out = {"mean_identity": mean, "pairs": pairs, "unique_fraction": unique_fraction(generated)}
    if reference is not None:
        out["reference_mean_identity"], out["reference_pairs"] = mean_pairwise_identity(reference, max_pairs, seed)
    return out


class CompositionMetric:
    """Generated sequences against ``reference`` (token arrays); ``seed`` draws the floor sample and the pairs."""

    def __init__(self, reference, seed: int = 0, max_pairs: int = 2000):
        self.reference = [np.asarray(r) for r in reference]
        self.seed, self.max_pairs = seed, max_pairs
        self.rows: dict[int, tuple[np.ndarray, int, int]] = {}  # index -> (final tokens, passes, extra passes)

    def update(self, index: int, start: np.ndarray, final: np.ndarray, passes: int, extra: int = 0) -> None:
        self.rows[index] = (np.asarray(final), int(passes), int(extra))

    def compute(self) -> dict:
        rows = [self.rows[i] for i in sorted(self.rows)]
        seqs = [final for final, _, _ in rows]
        floor, rest = floor_split(self.reference, [len(s) for s in seqs], self.seed)
        return {"n": len(seqs), **pass_stats([p for _, p, _ in rows], [e for _, _, e in rows]),
                "jsd_aa": jsd_aa(seqs, self.reference), "jsd_dipeptide": jsd_dipeptide(seqs, self.reference),
                "jsd_aa_floor": jsd_aa(floor, rest) if rest else float("nan"),
                "jsd_dipeptide_floor": jsd_dipeptide(floor, rest) if rest else float("nan"),
                "diversity": diversity(seqs, self.reference, max_pairs=self.max_pairs, seed=self.seed),
                "reference_n": len(self.reference)}
