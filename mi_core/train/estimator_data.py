"""Exact-probe training data for the MI estimator, written as resumable shards.

``python -m mi_core make-estimator-data sudoku --model PATH --out runs/estimator_data/NAME [--states 600]``
(``make-estimator-data protein ...``: see :mod:`mi_core.train.protein_estimator_data`, same shard format)

States come from three sources, mixed per state (``StateMix``):
- ``uniform``: a solved grid with each cell masked at a rate t ~ U(0, 1);
- ``puzzle``: a unique puzzle's clue pattern;
- ``decode``: an intermediate state of a decoding run (top-k lowest entropy, k and temperature drawn per
  shard) started from a puzzle: the distribution the estimator meets when it guides a sampler.
Training draws from seeded *generated* puzzles (with a fresh validity-preserving transform per state);
``eval-estimator`` draws the same way from a puzzle file, so evaluation never sees training states.

Each shard ``shard_00000.safetensors`` holds, per state, the tokens, the estimator's inputs from one MDM
pass (hidden, probs, entropy, masked) and the exact probe's symmetric MI, passes and seconds. Shard ``i``
depends only on ``(seed, i)``, so an interrupted run resumes by skipping the shards already on disk.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from mi_core.decoding import decode, make_strategy
from mi_core.device import pick_device
from mi_core.domains.sudoku import MASK_ID
from mi_core.domains.sudoku_gen import random_transform
from mi_core.io import check_output_dir
from mi_core.mi.estimator import mdm_features
from mi_core.options import ArgumentParser

SOURCES = ("uniform", "puzzle", "decode")
MANIFEST = "manifest.json"
DEFAULT_MODEL = Path("assets/sudoku_mdm.safetensors")


@dataclass(frozen=True)
class StateMix:
    """Relative weights of the three state sources (need not sum to 1)."""

    uniform: float = 0.4
    puzzle: float = 0.2
    decode: float = 0.4

    def __post_init__(self):
        weights = self.weights()
        if (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"state mix weights must be >= 0 and not all 0, got {self.as_text()}")

    def weights(self) -> np.ndarray:
        return np.array([self.uniform, self.puzzle, self.decode], dtype=float)

    def as_text(self) -> str:
        return ",".join(f"{w:g}" for w in self.weights())

    @classmethod
    def parse(cls, text: str) -> StateMix:
        """``"0.4,0.2,0.4"`` (uniform, puzzle, decode) -> StateMix; ValueError on anything else."""
        parts = text.split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 3:
            raise ValueError(f"--mix expects three numbers 'uniform,puzzle,decode', got {text!r}")
        return cls(*values)


@dataclass(frozen=True)
class DataConfig:
    """``states`` in shards of ``shard_size``; ``pool``: generated (puzzle, solution) pairs to draw from;
    ``eps``: the probe's pruning threshold, 0 (exact) by default: on a Sudoku MDM checkpoint eps = 1e-4
    saved 4-40% of the passes but moved MI by up to 1e-3 nats, more than the median pair's MI (its error
    bound is stored per state); ``min_masked``: every state keeps at least this many masked cells."""

    seed: int = 0
    states: int = 600
    shard_size: int = 8
    pool: int = 400
    eps: float = 0.0
    max_batch: int = 512
    min_masked: int = 2
    mix: StateMix = StateMix()

    def __post_init__(self):
        if min(self.states, self.shard_size, self.pool, self.max_batch) < 1:
            raise ValueError("states, shard_size, pool and max_batch must be positive")
        if self.eps < 0:
            raise ValueError(f"eps must be >= 0, got {self.eps}")
        if self.min_masked < 2:
            raise ValueError(f"min_masked must be >= 2, got {self.min_masked}")

    @property
    def shards(self) -> int:
        return -(-self.states // self.shard_size)


def ensure_masked(mask: np.ndarray, minimum: int, rng: np.random.Generator) -> np.ndarray:
    """``(N,)`` bool mask with extra random cells masked until at least ``minimum`` are."""
    mask = mask.copy()
    short = minimum - int(mask.sum())
    if short > 0:
        mask[rng.choice(np.flatnonzero(~mask), size=short, replace=False)] = True
    return mask


def uniform_state(solution: np.ndarray, rng: np.random.Generator, minimum: int) -> np.ndarray:
    """A solved grid ``(N,)`` with each cell masked (0) at a rate t ~ U(0, 1)."""
    mask = ensure_masked(rng.random(solution.shape) < rng.random(), minimum, rng)
    return np.where(mask, MASK_ID, solution)


def decode_states(model, starts: np.ndarray, rng: np.random.Generator, minimum: int, device) -> np.ndarray:
    """One random intermediate state ``(B, N)`` of a decoding run from each start ``(B, N)``.

    The run uses the top-k lowest-entropy strategy with k in {1, 2, 3, 4} and temperature 0 or 1, drawn
    once for the batch; each row's state is drawn uniformly from the steps that still leave ``minimum``
    cells masked (the start itself when none does).
    """
    strategy = make_strategy("topk", k=int(rng.integers(1, 5)))
    temperature = float(rng.choice([0.0, 1.0]))
    tokens = torch.as_tensor(starts, device=device)
    steps = decode(model, tokens, strategy, temperature=temperature, seed=int(rng.integers(2**31)))
    frames = [f.tokens.cpu().numpy() for f in steps]
    out = starts.copy()
    for b in range(len(starts)):
        options = [f[b] for f in frames if (f[b] == model.mask_id).sum() >= minimum]
        if options:
            out[b] = options[int(rng.integers(len(options)))]
    return out


def draw_states(model, puzzles: np.ndarray, solutions: np.ndarray, n: int, mix: StateMix,
                rng: np.random.Generator, *, transform: bool, minimum: int = 2,
                device="cpu") -> tuple[np.ndarray, np.ndarray]:
    """``n`` states drawn from ``(P, N)`` puzzles and their solutions (0 = blank).

    Returns ``(tokens (n, N) int64, source (n,) int64)`` with ``source`` indexing :data:`SOURCES`.
    With ``transform`` each state's (puzzle, solution) gets a fresh random validity-preserving transform.
    """
    source = rng.choice(len(SOURCES), size=n, p=mix.weights() / mix.weights().sum())
    pick = rng.integers(len(puzzles), size=n)
    pairs = np.stack([puzzles[pick], solutions[pick]], 1).reshape(2 * n, -1)
    if transform and n:
        pairs = random_transform(pairs, rng, pair=2)
    pairs = pairs.reshape(n, 2, -1)
    tokens = pairs[:, 0].copy()
    for s in np.flatnonzero(source == 0):
        tokens[s] = uniform_state(pairs[s, 1], rng, minimum)
    dec = np.flatnonzero(source == 2)
    if len(dec):
        tokens[dec] = decode_states(model, pairs[dec, 0], rng, minimum, device)
    return tokens.astype(np.int64), source.astype(np.int64)


def probe_state(model, tokens: torch.Tensor, eps: float, max_batch: int) -> dict[str, torch.Tensor]:
    """The exact probe of one state ``(N,)``: symmetric ``mi`` ``(N, N)`` float32, its largest
    ``error_bound`` (0 when ``eps == 0``), ``passes`` and ``seconds``."""
    return probe_states(model, tokens[None], eps, max_batch)[0]


def probe_states(model, tokens: torch.Tensor, eps: float, max_batch: int) -> list[dict[str, torch.Tensor]]:
    """:func:`probe_state` of each of ``(S, N)`` states from one :func:`probe_many` call (full batches);
    each ``seconds`` is the call's wall time divided by ``S``."""
    from mi_core.mi.probe import probe_many

    many = probe_many(model, tokens, eps=eps, max_batch=max_batch)
    mi, bound = many.mi.float().cpu(), many.error_bound.amax((1, 2)).float().cpu()
    seconds = torch.tensor(many.seconds_per_state)
    return [{"mi": mi[s], "error_bound": bound[s], "passes": p, "seconds": seconds}
            for s, p in enumerate(many.passes.cpu())]


def make_shard(model, puzzles: np.ndarray, solutions: np.ndarray, index: int, cfg: DataConfig, device,
               on_state=None) -> dict[str, torch.Tensor]:
    """Shard ``index``: its states (seeded by ``(cfg.seed, index)``), their MDM features and exact MI."""
    rng = np.random.default_rng([cfg.seed, index])
    n = min(cfg.shard_size, cfg.states - index * cfg.shard_size)
    tokens, source = draw_states(model, puzzles, solutions, n, cfg.mix, rng, transform=True,
                                 minimum=cfg.min_masked, device=device)
    tokens = torch.as_tensor(tokens, device=device)
    hidden, probs, entropy, masked = mdm_features(model, tokens)
    rows = probe_states(model, tokens, cfg.eps, cfg.max_batch)
    for row in rows if on_state else ():
        on_state(int(row["passes"]))
    shard = {"tokens": tokens, "hidden": hidden, "probs": probs, "entropy": entropy, "masked": masked,
             "source": torch.as_tensor(source)}
    shard.update({k: torch.stack([r[k] for r in rows]) for k in rows[0]})
    return {k: v.detach().cpu().contiguous() for k, v in shard.items()}


def shard_path(out: Path, index: int) -> Path:
    return out / f"shard_{index:05d}.safetensors"


def file_sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def command_line(cfg: DataConfig, model_path: Path, out: Path) -> str:
    """The ``make-estimator-data`` command that writes exactly these shards."""
    return (f"python -m mi_core make-estimator-data sudoku --model {model_path} --out {out} --states {cfg.states} "
            f"--shard-size {cfg.shard_size} --pool {cfg.pool} --eps {cfg.eps:g} --max-batch {cfg.max_batch} "
            f"--mix {cfg.mix.as_text()} --seed {cfg.seed}")


def write_manifest(out: Path, cfg, model_path: Path, model, command: str | None = None,
                   sources: tuple[str, ...] = SOURCES, domain: str = "sudoku") -> dict:
    """Create ``out/manifest.json`` or check that the one there describes the same run (``cfg``: a
    dataclass; ``command`` defaults to the Sudoku :func:`command_line`).

    Raises:
        ValueError: the directory holds shards of another config or another model.
    """
    manifest = {"config": json.loads(json.dumps(asdict(cfg))), "sources": list(sources), "domain": domain,
                "command": command or command_line(cfg, model_path, out),
                "model": str(model_path), "model_sha256": file_sha256(model_path),
                "model_config": asdict(model.cfg) if hasattr(model, "cfg") else None}
    path = out / MANIFEST
    if path.is_file():
        old = json.loads(path.read_text())
        for key in ("config", "model_sha256"):
            if old.get(key) != manifest[key]:
                raise ValueError(f"{out} holds shards of a different {key.replace('_', ' ')}; use a new --out "
                                 f"or the same settings (found {old.get(key)}, asked for {manifest[key]})")
        return old
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def save_shard(shard: dict[str, torch.Tensor], path: Path) -> None:
    """Write atomically (a temporary file renamed into place), so a killed run never leaves half a shard."""
    tmp = path.with_suffix(".tmp")
    save_file(shard, str(tmp))
    tmp.replace(path)


def load_shards(path: str | Path) -> tuple[dict[str, torch.Tensor], dict]:
    """All shards under ``path`` concatenated (``masked`` as bool), and the manifest with a ``summary``
    (states, passes, probe seconds) added.

    Raises:
        FileNotFoundError: no manifest or no shard.
    """
    path = Path(path)
    if not (path / MANIFEST).is_file():
        raise FileNotFoundError(f"no estimator data at {path} (missing {MANIFEST})")
    files = sorted(path.glob("shard_*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no shards under {path}")
    parts = [load_file(str(f)) for f in files]
    data = {k: torch.cat([p[k] for p in parts]) for k in parts[0]}
    data["masked"] = data["masked"].bool()
    manifest = json.loads((path / MANIFEST).read_text())
    manifest["summary"] = summarise(data, manifest.get("sources", SOURCES))
    return data, manifest


def summarise(data: dict[str, torch.Tensor], sources=SOURCES) -> dict:
    """Counts and cost of a data set: states per source, masked cells, probe passes and seconds (and the
    mean ``length`` of variable-length, padded states)."""
    counts = torch.bincount(data["source"], minlength=len(sources)).tolist()
    summary = {"states": len(data["tokens"]), "by_source": dict(zip(sources, counts)),
               "mean_masked": float(data["masked"].float().sum(1).mean()), "passes": int(data["passes"].sum()),
               "probe_seconds": round(float(data["seconds"].sum()), 1),
               "max_error_bound": float(data["error_bound"].max())}
    if "length" in data:
        summary["mean_length"] = float(data["length"].float().mean())
    return summary


def training_pool(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """``(puzzles, solutions)`` each ``(count, 81)``: generated unique puzzles (never a puzzle file)."""
    from mi_core.train.sudoku_data import build_pool

    pool = build_pool(seed, count, puzzles=True, workers=1)
    return pool[:, 0], pool[:, 1]


def run(model, model_path: Path, cfg: DataConfig, out: Path, device, log=print) -> dict:
    """Write every missing shard of ``cfg`` under ``out``; return the data summary."""
    write_manifest(out, cfg, model_path, model)
    todo = [i for i in range(cfg.shards) if not shard_path(out, i).is_file()]
    done_states = cfg.states - sum(min(cfg.shard_size, cfg.states - i * cfg.shard_size) for i in todo)
    log(f"{out}: {cfg.shards - len(todo)} of {cfg.shards} shards already written")
    if todo:
        puzzles, solutions = training_pool(cfg.seed + 7919, cfg.pool)
        with tqdm(total=cfg.states, initial=done_states, unit="state", desc="probe", file=sys.stderr) as bar:
            passes = 0

            def on_state(n: int) -> None:
                nonlocal passes
                passes += n
                bar.set_postfix(passes=passes, refresh=False)
                bar.update(1)

            for i in todo:
                save_shard(make_shard(model, puzzles, solutions, i, cfg, device, on_state), shard_path(out, i))
    return load_shards(out)[1]["summary"]


def build_parser() -> argparse.ArgumentParser:
    p = ArgumentParser(prog="python -m mi_core make-estimator-data", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("domain", choices=["sudoku", "protein"], help="protein: see 'make-estimator-data protein -h'")
    p.add_argument("--model", type=Path, default=DEFAULT_MODEL, help="the frozen MDM whose MI is learned")
    p.add_argument("--out", type=Path, required=True, help="shard directory (outside the repository's tracked files)")
    p.add_argument("--states", type=int, default=DataConfig.states)
    p.add_argument("--shard-size", type=int, default=DataConfig.shard_size)
    p.add_argument("--pool", type=int, default=DataConfig.pool, help="generated puzzles to draw states from")
    p.add_argument("--eps", type=float, default=DataConfig.eps, help="probe pruning threshold (0 = no pruning)")
    p.add_argument("--max-batch", type=int, default=DataConfig.max_batch)
    p.add_argument("--mix", default=StateMix().as_text(), help="weights of uniform,puzzle,decode states")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    return p


def config_from_args(args: argparse.Namespace) -> DataConfig:
    return DataConfig(seed=args.seed, states=args.states, shard_size=args.shard_size, pool=args.pool, eps=args.eps,
                      max_batch=args.max_batch, mix=StateMix.parse(args.mix))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["protein"]:
        from mi_core.train.protein_estimator_data import main as protein_main

        return protein_main(argv[1:])
    args = build_parser().parse_args(argv)
    check_output_dir(args.out)
    cfg = config_from_args(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    from mi_core.models.sudoku_mdm import load_sudoku_mdm

    device = pick_device(args.device)
    model = load_sudoku_mdm(args.model, device)
    start = time.time()
    summary = run(model, args.model, cfg, args.out, device, log=lambda m: print(m, file=sys.stderr, flush=True))
    summary["wall_seconds_this_run"] = round(time.time() - start, 1)
    print(json.dumps(summary, indent=2))
    return 0
