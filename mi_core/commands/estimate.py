"""``python -m mi_core estimate DOMAIN --state TEXT --json OUT``: pairwise MI from the neural estimator.

One forward pass of the domain's model plus the estimator head. The JSON has ``probe``'s keys and layout
for ``mi`` (N x N), ``entropy``, ``marginals``, ``passes`` and ``seconds`` (the median of 5 timed runs after
a warm-up). ``--model auto`` (the default for sequence domains) is the model the estimator was trained on
when that file exists, else the domain's own ``auto``, else its default model; the estimator's hidden size
and the weights it was trained on are checked against it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from mi_core.commands.probe import GridState, load_state, state_key, strongest_pair
from mi_core.device import pick_device
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_json, check_output, display_path
from mi_core.mi.estimator import (
    Estimate,
    EstimatorInputError,
    absent_own_estimator,
    check_model_match,
    estimate_mi,
    load_estimator,
    model_hint,
    shipped_estimator_for,
)
from mi_core.models.base import load_meta, trained_on_mismatch
from mi_core.models.loading import other_domain
from mi_core.options import Device, Force, JsonOut, counted, option, parse_positions

TIMED_RUNS = 5


@dataclass
class SequenceInput:
    state: str = option(None, "the sequence, _ (or X) for masked positions", flags=("--sequence", "--state"),
                        required=True)
    mask_positions: str | None = option(None, "also mask these 1-based positions, e.g. 5,9-20 (and a domain's "
                                        "named regions, as its probe takes them)")
    model: str = option("auto", "auto (the model the estimator was trained on), or the domain's model names or a path")


@dataclass
class EstimatorFile:
    estimator: str | None = option(None, "estimator weights (.safetensors + .json); default the domain's shipped one",
                                   default_for=lambda d: d.default_file("estimator"))


def options(domain: Domain) -> list:
    return [GridState if domain.layout == "grid" else SequenceInput, EstimatorFile, JsonOut, Device, Force]


def model_spec(choice: str, estimator_path: str, domain: Domain) -> str | None:
    """``--model``, with ``auto`` read as the model the estimator was trained on when that file is here, else as
    the domain's ``auto`` where its loader takes one, else as the domain's default model."""
    if choice != "auto":
        return choice
    trained_on = load_meta(estimator_path).get("mdm")
    if trained_on and Path(trained_on).is_file():
        return trained_on
    return "auto" if "auto" in (*domain.model_keywords, domain.model_default) else None  # None: the default


def load(domain: Domain, text: str, model_choice: str, estimator_path: str, device: torch.device,
         named: bool = True):
    """``(model, estimator, tokens (1, N), model spec, estimator path)``; a ValueError names bad input or a
    mismatch. ``named``: the estimator was given with ``--estimator``; else the domain's default, which gives way
    to the shipped estimator trained on the model when ``--model`` names another."""
    domain.parse_input(text)  # bad input is named before any file loads
    estimator = load_estimator(estimator_path, device)
    trained = other_domain(estimator_path, domain)
    if trained is not None:  # said before a model the estimator names is loaded
        raise ValueError(f"--estimator {estimator_path} is an estimator of {trained.cli_name}, not "
                         f"{domain.cli_name}: give one trained on a model for {domain.cli_name}")
    spec = model_spec(model_choice, estimator_path, domain)
    model, description, tokens = load_state(domain, text, spec, device, verb="estimate",
                                            other="" if domain.layout == "grid" else ", or give --mask-positions")
    if not named and trained_on_mismatch(model, estimator_path):
        estimator_path = shipped_for(model, domain)
        estimator = load_estimator(estimator_path, device)
    try:
        check_model_match(model, estimator, description if spec is None else f"the model {spec}",
                          f"the estimator {estimator_path}")
    except EstimatorInputError as err:
        raise ValueError(f"{err}{model_hint(estimator_path, model) if named else ''}") from None
    problem = trained_on_mismatch(model, estimator_path)  # another model of its width fits every shape, and misleads
    if problem:
        raise ValueError(f"--estimator {estimator_path} {problem}: give --model with the model it was trained on, "
                         "or an --estimator trained on this one")
    return model, estimator, tokens[None], spec, estimator_path


def shipped_for(model, domain: Domain) -> str:
    """The shipped estimator trained on ``model``'s weights; a ValueError naming ``--estimator`` when none was."""
    try:
        return str(shipped_estimator_for(model, domain))
    except EstimatorInputError:
        raise ValueError(f"no shipped MI estimator was trained on {display_path(model.weights_path)}: give "
                         "--estimator FILE (python -m mi_core train-estimator makes one)") from None


def with_masked(domain: Domain, text: str, spec: str | None) -> str:
    """``text`` with the positions of ``--mask-positions`` ``spec`` masked too (as ``probe`` reads it)."""
    if not spec:
        return text
    tokens = np.asarray(domain.parse_input(text), dtype=np.int64)
    named = getattr(domain, "named_positions", None)  # a domain's own names of positions (an antibody's regions)
    noun = domain.nouns[0]
    tokens[named(tokens, spec) if named else
           parse_positions(spec, len(tokens), f"a {noun} number or a range like 9-20", noun)] = domain.mask_id
    out = domain.state_text(tokens)
    if domain.parse_input(out) != tokens.tolist():
        raise ValueError(f"--mask-positions: the {domain.label} domain does not read back the state it writes; "
                         "mask with its own marks in --sequence instead")
    return out


def timed_estimate(model, estimator, tokens: torch.Tensor) -> Estimate:
    """:func:`estimate_mi` after a warm-up, ``seconds`` the median of :data:`TIMED_RUNS` runs."""
    estimate_mi(model, estimator, tokens)
    runs = [estimate_mi(model, estimator, tokens) for _ in range(TIMED_RUNS)]
    est = runs[0]
    est.seconds = statistics.median(r.seconds for r in runs)
    return est


def report(est: Estimate, domain: Domain) -> None:
    """The terminal's lines: what was estimated, how fast, and the strongest pair named as ``probe`` names it."""
    masked = int(est.masked.sum())
    print(f"estimated MI of {counted(masked, domain.nouns[0], 'masked')} in {1e3 * est.seconds:.1f} ms (1 pass)")
    print(strongest_pair(est.mi[0], domain, masked))


def main(args) -> int:
    check_output(args.json, args.force)
    domain = get_domain(args.domain)
    if args.estimator is None:
        raise ValueError(f"the {domain.label} domain ships no MI estimator: give --estimator FILE")
    if "estimator" not in args.given and (absent := absent_own_estimator(domain)):
        raise ValueError(f"{absent}; or give --estimator FILE")
    device = pick_device(args.device, args.threads)
    state = with_masked(domain, args.state, getattr(args, "mask_positions", None))
    model, estimator, tokens, spec, path = load(domain, state, args.model, args.estimator, device,
                                                named="estimator" in args.given)
    est = timed_estimate(model, estimator, tokens)
    if args.json is not None:
        shown = spec if model.weights_path is None else display_path(model.weights_path)
        payload = {"domain": domain.cli_name, state_key(domain): domain.state_text(tokens[0].cpu()),
                   "device": str(device), "model": shown, "estimator": display_path(path), "mi": est.mi[0].tolist(),
                   "entropy": est.entropy[0].tolist(), "marginals": est.marginals[0].tolist(), "passes": 1,
                   "seconds": est.seconds}
        if state != args.state:  # --mask-positions: the residues masked, as probe keeps them
            payload["native"] = domain.state_text(domain.parse_input(args.state))
        atomic_write_json(args.json, payload, indent=None)
    report(est, domain)
    return 0
