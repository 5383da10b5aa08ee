"""``python -m mi_core bench-order DOMAIN ...``: the learned order against the step-budget heuristics at the
same T, and eb / mi at matching mean passes. A domain's own benchmark (``Domain.order_bench``: a module with
``options`` and ``run_bench(args, domain)``) adds options and writes the rows; else :func:`run_default`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from tqdm import tqdm

from mi_core.bench import decode
from mi_core.bench.report import (
    Kept,
    check_partial,
    command_line,
    drop_partial,
    markdown_table,
    run_identity,
    update_section,
)
from mi_core.decoding import make_strategy
from mi_core.decoding.base import MAX_COUNT
from mi_core.decoding.budgets import FILLED, default_budgets, fit_budgets, positions_to_fill
from mi_core.decoding.learned import MODES
from mi_core.decoding.selector import check_order_net_fits, load_order_net
from mi_core.device import pick_device
from mi_core.domain import get_domain
from mi_core.io import atomic_write_json, atomic_write_text, check_output
from mi_core.mi.estimator import absent_own_estimator
from mi_core.models.base import ModelFileError, load_meta
from mi_core.options import SKIP, Device, Force, float_list, int_list, markdown_option, option, seed


def none_or_list(budgets) -> list[int] | None:
    return None if budgets is None else list(budgets)


def selector_of(args, domain, model, budgets: list[int] | None = None) -> Path:
    """``--selector``, else the domain's shipped one; loaded and checked against ``model`` once, so a missing,
    wrong or unfitting file fails before decoding; a note where ``budgets`` (default ``--budgets``) lie outside those
    it was trained at."""
    selector = args.selector or domain.default_file("selector")
    if selector is None:
        raise ValueError(f"the {domain.label} domain ships no order selector: give --selector FILE")
    check_order_net_fits(load_order_net(selector), model, selector)
    trained = trained_budgets(selector)
    outside = [t for t in (args.budgets if budgets is None else budgets)
               if trained and not min(trained) <= t <= max(trained)]
    if outside:
        print(f"note: {selector} was trained at budgets {','.join(map(str, trained))}; its choices at "
              f"{','.join(map(str, outside))} are extrapolated", file=sys.stderr)
    return Path(selector)


def selector_or_skip(args, domain, model, budgets: list[int] | None = None) -> Path | None:
    """:func:`selector_of`, or None (with a note) where ``--selector`` is unset and the domain ships none, or ships
    one of other weights than ``model`` (a user's own model): the learned rows are skipped, as the mi rows are
    without an estimator."""
    named = f" or ${domain.selector_env}" if domain.selector_env else ""  # a variable for train-order's file
    adds = f"(--selector FILE{named} adds them; python -m mi_core train-order {domain.cli_name} makes one)"
    if args.selector is None and domain.default_file("selector") is None:
        print(f"note: the {domain.label} domain ships no order selector: the learned rows are skipped {adds}",
              file=sys.stderr)
        return None
    try:
        return selector_of(args, domain, model, budgets)
    except ModelFileError:
        default = domain.default_file("selector")
        if args.selector is not None or not Path(default).is_file():  # a file given, or none there: its own error
            raise
        print(f"note: the learned rows are skipped: the default order selector {default} does not fit this model "
              f"{adds}", file=sys.stderr)
        return None


def estimator_of(path, domain, model) -> str | None:
    """``--estimator`` ``path``, loaded and checked against ``model`` once (its shapes and the weights it was trained
    on), so a wrong file fails before decoding; else the estimator trained on the model's own weights file
    (:func:`~mi_core.bench.decode.default_estimator`); None when there is none."""
    if path is not None:
        decode.check_estimator(model, path, "--model", domain)
    return decode.default_estimator(model, domain, path)


def trained_budgets(selector: str | Path) -> list[int]:
    """The step budgets T a selector was trained at (its JSON's ``train.budgets``; empty when not recorded)."""
    try:
        train = load_meta(selector).get("train")
    except ValueError:
        return []
    budgets = train.get("budgets") if isinstance(train, dict) else None
    return sorted(budgets) if isinstance(budgets, list) and all(isinstance(t, int) for t in budgets) else []


def gammas_of(args, default=()) -> list[float]:
    """The eb / mi budgets of ``--gammas`` (``""``: none), else ``default``."""
    return list(default) if args.gammas is None else list(args.gammas)


def default_gammas(args, domain) -> dict[str, list[float]]:
    """The eb and mi budgets of ``run_default``: ``--gammas`` for both, else each one's of the domain's
    ``strategy_defaults`` (the app's and its benchmark's: an antibody's eb 4, mi 8); a note where there is none."""
    if args.gammas is not None:
        return {name: list(args.gammas) for name in ("eb", "mi")}
    found = {name: [float(value)] for name, key, value in domain.strategy_defaults
             if key == "gamma" and name in ("eb", "mi")}
    if not found:
        print(f"note: the {domain.label} domain names no eb / mi budget (a gamma in its strategy_defaults): those rows "
              "are skipped (--gammas adds them)", file=sys.stderr)
    return found


def markdown_path(args) -> Path:
    """``--markdown``, else the JSON path with .md (``-``: standard output)."""
    return args.markdown or args.json.with_suffix(".md")


def write_report(args, payload, text: str, echo: bool = False) -> Path | None:
    """``payload`` into ``--json``; the command line and ``text`` into the domain's section (``bench-order-KEY``:
    ``bench-order-sudoku9``) of ``--markdown`` (default: the JSON path with .md), the rest of that file kept, as
    every ``--markdown`` is updated; ``--markdown -``: ``text`` on standard output instead. ``echo``: print
    ``text`` as well. The .md path written (None for ``-``)."""
    atomic_write_json(args.json, payload)
    md = markdown_path(args)
    if str(md) == "-" or echo:
        print(text, flush=True)
    command = f"`{command_line(args, 'bench-order')}`\n\n" if getattr(args, "argv", None) else ""
    if str(md) == "-":
        md = None
    elif args.markdown is None:  # the report's own file beside the JSON (--force checked): written whole
        atomic_write_text(md, command + text + "\n")
    else:
        update_section(f"bench-order-{get_domain(args.domain).key}", command + text, md)
    drop_partial(args.json)  # kept until both files are written: stopped between them, --resume writes both again
    return md


class Rows:
    """A bench-order run's rows as they finish: each printed as a JSON line above a bar on standard error that
    counts them (a row decodes every input once: minutes on a CPU), and kept in ``--json``'s .partial file
    (:class:`~mi_core.bench.report.Kept`), so a stopped run's ``--resume`` reads them back instead of running them
    again."""

    def __init__(self, bar, args, used: dict):
        self.bar, self.kept = bar, Kept(args, "bench-order", run_identity(args, **used))
        if args.resume:
            print(f"{self.kept.path}: {len(self.kept.done)} rows already run", file=sys.stderr)

    def __call__(self, key, compute: Callable[[], dict], line: Callable[[dict], dict] = lambda row: row) -> dict:
        """The row of ``key`` (JSON-able: sampler, params, ...): kept, else ``compute()``'s; ``line(row)`` printed."""
        key = json.dumps(key, sort_keys=True)
        if key not in self.kept:
            self.kept.keep({key: compute()})
        row = self.kept.done[key]
        self.bar.write(json.dumps(line(row)), file=sys.stdout)
        self.bar.update()
        return row


@contextmanager
def row_bar(total: int, args, **used) -> Iterator[Rows]:
    """:class:`Rows` over a bar of ``total`` rows (``used``: see :func:`run_identity`)."""
    with tqdm(total=total, desc="bench-order", unit="row", file=sys.stderr) as bar:
        yield Rows(bar, args, used)


def strategy_for(name: str, params: dict, selector: Path):
    return make_strategy(name, **params, **({"selector": str(selector)} if name.startswith("learned") else {}))


def matched(rows: list[dict], name: str, budget: int, best=lambda r: (r["accuracy"], -r["mean_passes"])) -> dict | None:
    """The best ``name`` row (the most accurate, or by ``best``) with mean passes <= ``budget``."""
    fits = [r for r in rows if r["sampler"] == name and r["mean_passes"] <= budget]
    return max(fits, key=best) if fits else None


@dataclass
class OrderBench:
    model: Path | None = option(None, "default: the shipped MDM of the domain")
    selector: Path | None = option(None, "default: the domain's shipped order selector (where none ships, or it "
                                   "was trained on another model than --model, no learned rows)")
    budgets: list[int] | None = option(None, "step budgets T, comma-separated; by default the domain's own, else "
                                       "round(k n / 16) for k = 1..4, below n: the most masked positions (to fill) "
                                       "of an input, or a fixed-length domain's length", parse=int_list,
                                       range=(1, MAX_COUNT),  # the most steps a sampler takes
                                       default_for=lambda d: none_or_list(default_budgets(d)))
    gammas: list[float] | None = option(None, "eb / mi budgets, comma-separated (default: the domain's); empty: skip",
                                        parse=float_list, range=(0.0, 1e6))
    seed: int = seed()
    json: Path = option(None, "write the rows here", required=True)
    resume: bool = option(False, "continue an interrupted run of the same options: the rows it finished (kept in "
                          "--json's .partial file as each finishes) are not run again")
    markdown: Path | None = markdown_option("write the report into this file's own section (bench-order-KEY, e.g. "
                                            "bench-order-sudoku9), keeping the rest (default: the --json path with "
                                            ".md; -: standard output)")


def mode_list(text: str) -> list[str]:
    """``"threshold,rank"`` -> ``["threshold", "rank"]``, each one of the ``learned`` strategy's modes, a mode named
    twice once (empty: none)."""
    modes = list(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not a mode of learned; choose from {', '.join(MODES)}")
    return modes


@dataclass
class OrderModes:
    modes: list[str] | None = option(None, "modes of the learned rows, comma-separated (threshold, rank, paced, "
                                     "sample; default: learned's own, threshold)", parse=mode_list)


@dataclass
class OrderEstimator:
    estimator: Path | None = option(None, "MI estimator of the mi rows (default: the one trained on the model's own "
                                    "weights: the domain's, else one under assets/)")


# why a domain serves() refuses cannot run this command (the command line says it)
UNSERVED = "has neither an order bench nor a metric (a Domain's order_bench, metric)"


def serves(domain) -> bool:
    return domain.order_bench is not None or domain.metric is not None


def describe(domain) -> str:
    if domain.order_bench:
        return domain.order_bench.__doc__
    return (f"bench-order {domain.cli_name}: the learned order against the step-budget heuristics at the same T.\n\n"
            "For each budget T: random, top_prob and top_margin (steps=T) and, where a selector is given or the "
            "domain names one, learned in each of --modes; then eb and mi at each of --gammas (default: the gammas of "
            "the domain's strategy_defaults) and sequential once. The inputs are the domain's bench inputs, each row "
            "scored by the domain's metric (its score, else accuracy): a row per sampler and setting in --json, a "
            "table in --markdown.")


def options(domain) -> list:
    if domain.order_bench is None:
        inputs = decode.inputs_class(domain)
        return [*inputs.options(domain), (OrderBench, {"model": SKIP, "seed": SKIP}), OrderModes, OrderEstimator,
                Device, decode.run_options(inputs, domain), Force]
    own = domain.order_bench.options
    takes_seeds = "seeds" in {f.name for f in dataclasses.fields(own)}  # its --seeds seed every run: no --seed
    return [own, (OrderBench, {"seed": SKIP}) if takes_seeds else OrderBench, Device, Force]


def main(args) -> int:
    check_partial(args, "bench-order")  # resumed: the stopped run's JSON, written before its report, is replaced
    if args.markdown is None:  # the JSON's own report beside it: replaced only with --force, as the JSON
        if markdown_path(args) == args.json:  # --json rows.md: the report was written over the rows
            raise ValueError(f"--json {args.json} is the file its .md report goes to: name the rows a .json file")
        check_output(markdown_path(args), args.force or args.resume, "--json's .md report")
    elif str(args.markdown) != "-":
        check_output(args.markdown, True, "--markdown")  # a report file: its own section is replaced
    domain = get_domain(args.domain)
    return (domain.order_bench.run_bench if domain.order_bench else run_default)(args, domain)


def run_default(args, domain) -> int:
    """The domain's ``bench`` inputs through :func:`order_rows`, each row scored by the domain's metric (its
    ``score``, else ``accuracy``); a row per sampler and setting in ``--json``, a table in ``--markdown``."""
    inputs = decode.inputs_class(domain)(domain, args)
    rows, _, selector = order_rows(args, domain, inputs, (None,) if args.modes is None else args.modes)
    score = getattr(inputs.metric(), "score", "accuracy")
    table = markdown_table(rows, [("sampler", "sampler"), ("params", "params"), ("T", "T"), ("n", "n"),
                                  (score, score), ("mean_passes", "mean passes")])
    write_report(args, rows, f"{inputs.name}: selector {selector or 'none (no learned rows)'}\n\n{table}\n")
    return 0


def order_configs(budgets: list[int], modes: list, selector, gammas: dict, estimator) -> list[tuple]:
    """``(sampler, params, T)`` of every row, in the order they run: random, top_prob, top_margin at ``steps=T`` and
    learned in each of ``modes`` (None: its default) where there is a ``selector``, for each T; then eb and mi (mi
    only with an ``estimator``) at each of their ``gammas``, and sequential."""
    configs = []
    for t in budgets:
        configs += [(name, {"steps": t}, t) for name in ("random", "top_prob", "top_margin")]
        configs += [("learned", {"steps": t, **({"mode": m} if m else {})}, t) for m in modes if selector]
    configs += [(name, {"gamma": g}, None) for name in ("eb", "mi") for g in gammas.get(name, [])
                if name == "eb" or estimator]
    return configs + [("sequential", {}, None)]


def order_rows(args, domain, inputs, modes: list = (None,), extra: Callable | None = None,
               shown: Callable | None = None) -> tuple[list[dict], str, Path | None]:
    """``(rows, the model's description, the selector or None)``: ``inputs`` decoded by each of
    :func:`order_configs` (learned where a selector is given or shipped, mi with ``--estimator``, else the model's
    own, at ``--gammas`` or the domain's). ``extra(inputs, generation)``: more fields of a row; ``shown(row)``: what
    its printed line holds (default: all of it)."""
    gammas = default_gammas(args, domain)
    device = pick_device(args.device, args.threads)
    model, description, _ = decode.load(args, domain, device, inputs)
    budgets = list(fit_budgets(args.budgets, positions_to_fill(inputs.templates, model.mask_id), "--budgets", FILLED))
    selector = selector_or_skip(args, domain, model, budgets)
    estimator = estimator_of(args.estimator, domain, model) if gammas.get("mi") else None
    if estimator is None and gammas.get("mi"):
        absent = absent_own_estimator(domain)
        print(f"note: no MI estimator for {description}: the mi rows are skipped" + (f" ({absent})" if absent else ""),
              file=sys.stderr)
    run = decode.run_settings(args, inputs, domain, model, device=device)
    recorded = decode.model_fields(model, args)

    def row(name: str, params: dict, t: int | None) -> dict:
        strategy = strategy_for(name, params, selector)
        if name == "mi":
            strategy.estimator = estimator
        res, gen = decode.evaluate(model, inputs.templates, strategy, inputs.metric(), **run)
        return {"sampler": name, "params": params, "T": t, **res, **inputs.fields, **recorded,
                **(extra(inputs, gen) if extra else {}),
                **decode.estimator_fields(getattr(strategy, "estimator", None)), **decode.selector_fields(strategy)}

    configs = order_configs(budgets, modes, selector, gammas, estimator)
    with row_bar(len(configs), args, model=getattr(model, "weights_path", None) or getattr(args, "model", None),
                 selector=selector, estimator=estimator) as done:
        rows = [done(config, partial(row, *config), *([shown] if shown else [])) for config in configs]
    return rows, description, selector
