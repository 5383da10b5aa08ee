"""``python -m mi_core bench DOMAIN --sampler NAME [--set key=value ...] --json OUT [inputs]``: decode the
domain's benchmark inputs with one sampler and score them with its metric (``bench DOMAIN -h`` for its
options). A sampler that reads MI and is given no estimator (``--set estimator=PATH``) reads the one trained on
the model: the domain's own (its environment variable's file, else its default), else one under assets/.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from functools import partial

import numpy as np
from tqdm import tqdm

from mi_core.bench import decode
from mi_core.bench.report import Kept, Resume, check_partial, drop_partial, keep_stopped, run_identity, stopped_fields
from mi_core.decoding import make_strategy
from mi_core.decoding.base import check_one_of, typed_params
from mi_core.device import pick_device, warn_if_slow_bf16
from mi_core.domain import Domain, get_domain
from mi_core.io import atomic_write_json
from mi_core.options import Device, Force, JsonOut, counted, naming, option, option_flags, parse_sets, set_problem


@dataclass
class SamplerChoice:
    sampler: str = option("sequential", "a registered decoding strategy")
    sets: list[str] = option([], "strategy parameter (repeat)", flags=("--set",), many=True, metavar="KEY=VALUE",
                             check=set_problem)


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = decode.NO_METRIC


def serves(domain: Domain) -> bool:
    return domain.metric is not None


def describe(domain: Domain) -> str:
    return f"{domain.label}: {decode.inputs_class(domain).description}"


def options(domain: Domain) -> list:
    inputs = decode.inputs_class(domain)
    return [*inputs.options(domain), SamplerChoice, JsonOut, Resume, Device, decode.run_options(inputs, domain), Force]


def grow(bar, sampler: str, decode: int, count: int) -> None:
    bar.total += count
    bar.set_description(f"{sampler}, decode {decode}")
    bar.refresh()


def sampler_of(args, domain: Domain) -> tuple[dict, object]:
    """``(params, strategy)`` of ``--sampler`` and its ``--set`` pairs; a bad value is named as the ``--set`` that
    gave it."""
    sets = parse_sets(args.sets)
    with naming({key: f"--set {key}={value}" for key, value in sets.items()}):
        params = typed_params(args.sampler, check_one_of(args.sampler, sets, option_flags(options(domain))))
        return params, make_strategy(args.sampler, **params)


def main(args) -> int:
    check_partial(args, "bench", "inputs")
    domain = get_domain(args.domain)
    params, strategy = sampler_of(args, domain)
    inputs = decode.inputs_class(domain)(domain, args)  # read and checked before the model loads
    device = pick_device(args.device, args.threads)
    warn_if_slow_bf16(device, args.bf16)
    model, description, model_name = decode.load(args, domain, device, inputs)
    decode.with_estimator(strategy, model, domain, description)
    decode.with_selector(strategy, domain)
    run = decode.run_settings(args, inputs, domain, model, device=device)
    kept = Kept(args, "bench", run_identity(args, model=getattr(model, "weights_path", None) or args.model,
                                           estimator=getattr(strategy, "estimator", None),
                                           selector=getattr(strategy, "selector", None)), "inputs", valid=is_kept)
    decode.warm_up(model, inputs.templates, strategy, **run)
    gen = kept_generation(kept, len(inputs.templates))  # filled as the inputs finish: a stop keeps those
    result_of = partial(row, args, domain, inputs, model, model_name, device, strategy, params)
    try:
        with tqdm(total=len(inputs.templates), initial=sum(s is not None for s in gen.sequences), desc=args.sampler,
                  unit=inputs.unit, file=sys.stderr, bar_format=decode.PROGRESS_FORMAT) as bar:  # a part-decoded
            if run["retry"] is not None:  # state counts by its share filled; a round of decoding again grows it
                run["retry"].announce = partial(grow, bar, args.sampler)
            result, gen = decode.evaluate(model, inputs.templates, strategy, inputs.metric(), progress=bar.update,
                                          into=gen, keep=partial(keep_decoded, kept, gen), **run)
    except KeyboardInterrupt:
        keep_stopped_bench(result_of, args, inputs, gen, run["retry"])
        raise
    result = result_of(result, gen, range(len(inputs.templates)))
    print(json.dumps({k: v for k, v in result.items() if k not in ("passes", "sequences", "decode_passes")}, indent=2))
    if args.json:
        atomic_write_json(args.json, result)
    drop_partial(args.json)
    return 0


def is_kept(value) -> bool:
    """A value :func:`keep_decoded` wrote: the seconds, or an input's ``[tokens, passes, extra passes, decodes]``."""
    return isinstance(value, (int, float)) or (isinstance(value, list) and len(value) == 4)


def keep_decoded(kept: Kept, gen: decode.Generation, indices: list[int]) -> None:
    kept.keep({str(i): [gen.sequences[i].tolist(), gen.passes[i], gen.extra_passes[i], list(gen.decodes[i])]
               for i in indices} | {"seconds": gen.seconds})


def kept_generation(kept: Kept, count: int) -> decode.Generation:
    """The :class:`~mi_core.bench.decode.Generation` of ``count`` inputs that a stopped run kept (:func:`keep_decoded`;
    none: each None), for :func:`~mi_core.bench.decode.decode_all` to go on from."""
    gen = decode.Generation([None] * count, [0] * count, [0] * count, kept.done.get("seconds", 0.0),
                            [[] for _ in range(count)])
    for key, value in kept.done.items():
        if key != "seconds":
            i = int(key)
            tokens, gen.passes[i], gen.extra_passes[i], gen.decodes[i] = value
            gen.sequences[i] = np.asarray(tokens, dtype=np.int64)
    return gen


def keep_stopped_bench(result_of, args, inputs, gen, retry) -> None:
    """:func:`~mi_core.bench.report.keep_stopped` of the inputs a stopped run finished (their ``result_of``), into
    --json."""
    done = decode.finished(inputs.templates, gen, retry)
    total = len(inputs.templates)
    caveat = retrying_caveat(len([s for s in gen.sequences if s is not None]) - len(done), inputs.unit)

    def result() -> dict:
        figures = decode.score(inputs.templates, gen, inputs.metric(), done, retry is not None)
        return result_of(figures, gen, done) | stopped_fields(len(done), total, inputs.unit, caveat)

    keep_stopped(len(done), total, inputs.unit, [(args.json, None)], result,
                 lambda kept: atomic_write_json(args.json, kept), caveat)


def retrying_caveat(retrying: int, unit: str) -> str:
    """What a stop under ``--attempts`` leaves out beside the inputs not yet decoded: the ``retrying`` inputs whose
    decodes so far broke the rules and that have decodes left (to be decoded again, or being), the hard ones, so the
    kept accuracy is above what the whole run's would be."""
    if retrying <= 0:
        return ""
    return (f"{counted(retrying, unit)} whose decodes so far broke the rules, with decodes "
            "left, left out (the hard ones), so the kept accuracy is higher than the whole run's would be")


def row(args, domain, inputs, model, model_name, device, strategy, params, figures: dict, gen, done) -> dict:
    """The JSON result of the inputs ``done`` (all of them, or those a stopped run finished): ``figures``, the
    metric's over them, their results, and the settings."""
    result = {"domain": domain.cli_name, "sampler": args.sampler, "params": params, **inputs.fields,
              "model": model_name, "model_params": model.num_params(), "device": str(device),
              "precision": "bf16" if args.bf16 else "fp32", "seed": args.seed, "temperature": args.temperature,
              "batch_size": args.batch_size, "seeding": inputs.seeding, **figures, "seconds": gen.seconds,
              "passes": [gen.passes[i] for i in done], "sequences": [domain.state_text(gen.sequences[i]) for i in done]}
    if len(done) < len(inputs.templates):  # which inputs the figures and lists are of
        result["inputs_done"] = list(done)
    if getattr(args, "attempts", 1) > 1:
        result["decode_passes"] = [gen.decodes[i] for i in done]  # each puzzle's passes, a number per decode
    result |= decode.model_fields(model, args) | decode.estimator_fields(getattr(strategy, "estimator", None))
    return result | decode.selector_fields(strategy)
