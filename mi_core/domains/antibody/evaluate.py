"""``eval-model antibody``: masked-residue cross-entropy and perplexity of a model on antibody chains, overall
and per Kabat region, against the amino-acid composition of reference chains (``region_composition``: of the
same region and chain type). Each chain is masked ``draws`` times at ``mask_rate``, seeded by ``(seed, chain)``.
Perplexity is ``exp`` of the mean cross-entropy over residues (nats); ``SE(ppl) = ppl * SE(CE)``, the SE of that
pooled mean with the chain as the unit (a ratio estimator: chains score different numbers of residues)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.bench.report import command_line
from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.domains.antibody.sequence import CDR_NAMES, REGIONS, read_file, select_rows
from mi_core.domains.antibody.states import DEFAULT_CSV, EVAL_ROWS, TRAIN_ROWS, own_file
from mi_core.domains.protein import MASK_ID
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.models.loading import load_model_described
from mi_core.options import Device, Force, JsonOut, option, seed


def frequencies(chains, key=None) -> dict:
    """Add-one smoothed amino-acid frequencies ``(20,)`` of ``chains`` per ``key(chain, region)`` (None: one table);
    unknown residues (``X``, read as masked) are not counted."""
    counts = defaultdict(lambda: np.ones(20))
    for c in chains:
        for t, region in zip(c.tokens.tolist(), c.region_of()):
            if t != MASK_ID:
                counts[None if key is None else key(c.chain, region)][t - 1] += 1
    return {k: v / v.sum() for k, v in counts.items()}


@torch.no_grad()
def score_chains(model, chains, rate: float, draws: int, seed: int, device) -> list[dict]:
    """Per scored residue: chain index and type, region, native token and the model's cross-entropy. Chain ``i``
    is masked ``draws`` times at ``max(1, round(rate * known))`` of its ``known`` residues (an unknown one, ``X``,
    has no native to score), seeded by ``(seed, i)``."""
    rows = []
    for i, c in enumerate(chains):
        regions = c.region_of()
        rng = np.random.default_rng([seed, i])
        known = np.flatnonzero(c.tokens != MASK_ID)
        k = max(1, round(rate * len(known)))
        sets = [np.sort(rng.choice(known, size=k, replace=False)) for _ in range(draws)]
        tokens = torch.as_tensor(np.stack([c.tokens] * draws), device=device)
        for d, pos in enumerate(sets):
            tokens[d, pos] = MASK_ID
        logp = model(tokens).logits.float().log_softmax(-1).cpu().numpy()
        for d, pos in enumerate(sets):
            for p in pos.tolist():
                t = int(c.tokens[p])
                rows.append({"chain": i, "type": c.chain, "region": regions[p], "token": t, "ce": float(-logp[d, p, t - 1])})
    return rows


def pooled_mean_se(groups) -> tuple[float, float]:
    """The mean over every value of ``groups`` (lists of values, one per chain) and its standard error with the
    chain as the unit: the ratio estimator's ``sqrt(sum_i (S_i - mean * n_i)^2 / (m (m - 1))) / mean(n_i)``
    (``S_i``, ``n_i``: chain i's sum and count; ``m`` chains; 0 for one chain). Equal counts give the SE of the
    chain means; unequal counts (a region's residues per chain) weight each chain as the pooled mean does."""
    sums = np.array([float(np.sum(g)) for g in groups])
    counts = np.array([len(g) for g in groups], dtype=float)
    mean = float(sums.sum() / counts.sum())
    m = len(groups)
    if m < 2:
        return mean, 0.0
    return mean, float(np.sqrt(np.sum((sums - mean * counts) ** 2) / (m * (m - 1))) / counts.mean())


def summarise(rows: list[dict], field: str = "ce") -> dict:
    """Cross-entropy (the mean over residues), perplexity and their standard errors over chains
    (:func:`pooled_mean_se`) of ``rows``' ``field``."""
    per_chain = defaultdict(list)
    for r in rows:
        per_chain[r["chain"]].append(r[field])
    ce, se = pooled_mean_se(list(per_chain.values()))
    return {"cross_entropy": ce, "cross_entropy_se": se, "perplexity": math.exp(ce), "perplexity_se": math.exp(ce) * se,
            "n_residues": len(rows), "n_chains": len(per_chain)}


def group_report(rows: list[dict]) -> dict:
    model, comp, reg = summarise(rows), summarise(rows, "comp"), summarise(rows, "region_comp")
    return {**model, "composition_perplexity": comp["perplexity"], "composition_perplexity_se": comp["perplexity_se"],
            "composition_cross_entropy": comp["cross_entropy"],
            "region_composition_perplexity": reg["perplexity"], "ratio_to_composition": model["perplexity"] / comp["perplexity"]}


def evaluate(model, chains, reference, *, rate: float = 0.15, draws: int = 4, seed: int = 0, device="cpu") -> dict:
    """The report overall, ``by_region``, ``by_chain`` and ``by_chain_region`` (``"H CDR3"``, ...)."""
    if not 0 < rate < 1:
        raise ValueError(f"--mask-rate must be in (0, 1), got {rate}")
    unplaced = next((c for c in chains if c.unplaced), None)
    if unplaced is not None:
        raise ValueError(f"{unplaced.name}: {unplaced.unplaced}, so its Kabat regions cannot be placed; eval-model "
                         "scores chains by region: give that residue")
    overall = frequencies(reference)[None]
    regional = frequencies(reference, key=lambda chain, region: (chain, region))
    missing = sorted({c.chain for c in chains} - {chain for chain, _ in regional})
    if missing:
        raise ValueError(f"the composition baseline holds no {' or '.join(missing)} chain, so the region composition "
                         f"of the scored {' and '.join(missing)} chains has no reference: give --composition-rows "
                         "(or a --composition-csv) with both chain types")
    rows = score_chains(model, chains, rate, draws, seed, device)
    for r in rows:
        r["comp"] = float(-np.log(overall[r["token"] - 1]))
        r["region_comp"] = float(-np.log(regional[(r["type"], r["region"])][r["token"] - 1]))
    out = group_report(rows)
    out["by_region"] = {g: group_report([r for r in rows if r["region"] == g]) for g in REGIONS}
    out["by_region"]["CDRs"] = group_report([r for r in rows if r["region"] in CDR_NAMES])
    out["by_region"]["frameworks"] = group_report([r for r in rows if r["region"] not in CDR_NAMES])
    kinds = sorted({r["type"] for r in rows})
    out["by_chain"] = {k: group_report([r for r in rows if r["type"] == k]) for k in kinds}
    out["by_chain_region"] = {f"{k} {g}": group_report([r for r in rows if r["type"] == k and r["region"] == g])
                              for k in kinds for g in CDR_NAMES}
    return out


@dataclass
class EvalOptions:
    csv: Path = option(DEFAULT_CSV, "CSV (name,vh,vl) or FASTA file of antibodies")
    rows: str = option(EVAL_ROWS, f"antibodies to score, 1-based A-B or all (default: {EVAL_ROWS} of the shipped set; "
                       "all of another --csv)")
    composition_rows: str = option(TRAIN_ROWS, "antibodies of --csv (or --composition-csv) whose amino-acid "
                                   "frequencies are the composition baseline")
    composition_csv: Path | None = option(None, "take the baseline's antibodies from this file (default: --csv; with "
                                          "another --csv and no rows given, the shipped set's)")
    mask_rate: float = option(0.15, "share of each chain's residues masked", range=(0, 1))
    draws: int = option(4, "masked copies of each chain", range=(1, 1000))
    seed: int = seed()
    model: str = option("auto", "auto (the installed AntiBERTy) or a folder with its weights")


HEADLINE = ("perplexity", "perplexity_se", "composition_perplexity", "ratio_to_composition", "n_chains", "n_residues")


def options(domain) -> list:
    return [EvalOptions, JsonOut, Device, Force]


def scored_and_reference(args) -> tuple[list, list, int]:
    """The chains scored, those of the composition baseline, and how many the baseline left out as scored. With
    another ``--csv`` and no rows given, all of it is scored against the shipped set's rows ``1-70`` (the defaults
    split the shipped set), less any chain it holds; given rows must be disjoint."""
    own = own_file(args) and not {"rows", "composition_rows", "composition_csv"} & set(args.given)
    if own:
        args.rows, args.composition_csv = "all", DEFAULT_CSV
    chains = select_rows(read_file(args.csv), args.rows)
    try:
        reference = select_rows(read_file(args.composition_csv or args.csv), args.composition_rows,
                                "--composition-rows")
    except FileNotFoundError as err:
        if not own:
            raise
        raise FileNotFoundError(f"{err} (the composition baseline of another --csv: give --composition-csv FILE, or "
                                "--rows and --composition-rows, disjoint, of your file)") from None
    scored = {tuple(c.tokens.tolist()) for c in chains}
    kept = [c for c in reference if tuple(c.tokens.tolist()) not in scored]
    shared = [c.name for c in reference if tuple(c.tokens.tolist()) in scored]
    if shared and not own:  # the baseline would have counted the residues it is compared on
        raise ValueError(f"--rows and --composition-rows share {len(shared)} chain(s) (e.g. {shared[0]}): the "
                         "composition baseline must not hold the chains it is scored on; give disjoint rows")
    return chains, kept, len(shared)


def main(args) -> int:
    """``eval-model antibody``: the scores as JSON (``--json``), their headline printed."""
    check_output(args.json, args.force)
    chains, reference, left_out = scored_and_reference(args)
    device = pick_device(args.device, args.threads)
    domain = get_domain(args.domain)
    model, description = load_model_described(args.model, device, domain)
    res = evaluate(model, chains, reference, rate=args.mask_rate, draws=args.draws, seed=args.seed, device=device)
    res = {"domain": domain.cli_name, "model": description, "csv": display_path(args.csv), "rows": args.rows,
           "composition_rows": args.composition_rows, "composition_csv": display_path(args.composition_csv or args.csv),
           "composition_left_out": left_out,
           "mask_rate": args.mask_rate, "draws": args.draws, "seed": args.seed, **res,
           "command": command_line(args, "eval-model")}
    if args.json is not None:
        atomic_write_json(args.json, res)
    print(json.dumps({k: res[k] for k in HEADLINE if k in res}, indent=2))
    return 0
