"""Read the shipped sweep results (``assets/benchmarks/*.json``) into rows for the frontier plot.

A sweep file is a JSON list of rows with at least ``sampler``, ``params``, ``n``, ``mean_passes`` and a quality
measure: ``accuracy`` (Sudoku: puzzles solved, higher is better), ``jsd_dipeptide`` (proteins: the dipeptide
Jensen-Shannon divergence of generated sequences to the CATH reference, lower is better) or ``recovery``
(antibodies: the native residues an in-filling recovers, higher is better); the set's name is in
``set`` (else taken from the file name ``sweep_<set>.json``), without folders or a file extension, so
``top1465`` and ``top1465.txt`` are one set. Files that are not such lists (e.g. ``app_speed.json``) are
skipped, and named in ``skipped``.
"""

from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field, replace
from pathlib import Path

from mi_core.bench.report import params_text, ran_on, row_domain, variants
from mi_core.domain import env_file, get_domain, working_path
from mi_lens_app.domains import ROOT

REQUIRED = ("sampler", "params", "n", "mean_passes")


@dataclass(frozen=True)
class Metric:
    """A quality measure of sweep rows: its row key, axis title, whether higher is better, display scale."""

    key: str
    name: str
    title: str
    higher: bool
    scale: float = 1.0
    unit: str = ""
    binomial: bool = False  # a share of the row's n items (puzzles solved), so its SE is binomial


METRICS = (Metric("accuracy", "Accuracy", "puzzles solved (%)", True, 100.0, "%", binomial=True),
           Metric("jsd_dipeptide", "Dipeptide JSD", "dipeptide JSD to the reference (lower is better)", False),
           Metric("recovery", "Recovery", "native residues recovered (%)", True, 100.0, "%"))
EXTENSIONS = (".txt", ".csv", ".json", ".jsonl", ".fasta", ".fa")


def bench_dir_name() -> str:
    """The results folder as a command run in the working folder names it: what the page says it reads and where
    ``sweep --json`` is to write (``assets/benchmarks`` in the checkout, else its absolute path)."""
    return working_path(bench_dir())


def bench_dir() -> Path:
    """``MI_LENS_BENCHMARKS`` (``~`` expanded, a relative path read from the working folder, as every variable's
    path: :func:`mi_core.domain.env_file`), else the checkout's ``assets/benchmarks``."""
    named = env_file("MI_LENS_BENCHMARKS")
    return Path(named) if named else ROOT / "assets" / "benchmarks"


@dataclass
class BenchRows:
    rows: list[dict] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def sets(self) -> list[str]:
        return list(dict.fromkeys(r["set"] for r in self.rows))


def set_name(raw: str) -> str:
    """A set's display name: no folder, no ``sweep_`` prefix, no file extension (``data/top1465.txt`` ->
    ``top1465``)."""
    name = raw.replace("\\", "/").rsplit("/", 1)[-1].removeprefix("sweep_")
    for ext in EXTENSIONS:
        if name.lower().endswith(ext):
            return name[: -len(ext)]
    return name


# words of the shipped set ids, as a reader says them (set_title)
SET_WORDS = {"kaggle": "Kaggle", "graded": "graded", "top1465": "top-1465", "clue17": "17-clue", "cath": "CATH",
             "protein": "protein", "reference": "reference sequences", "first40": "first 40", "loop": "loop",
             "warm": "warm", "start": "start", "kaggle200": "Kaggle graded, 200 (40 per level)",
             "recurrent": "peer-recurrent", "tune200": "Kaggle dev tuning puzzles 501-700,",
             "views4": "4 symmetric views (a pass runs the model 4 times)",
             "foundation": "first Sudoku model (6 layers):"}
GRADES = ("Easy", "Medium", "Hard", "Expert")


def set_title(name: str) -> str:
    """A readable name of set id ``name``: ``kaggle_graded_dev_Hard`` -> ``Kaggle graded, Hard puzzles (dev
    split)``; ``hard_top1465`` -> ``top-1465 (hard-data model)``; ``order_...`` -> ``orders: ...``; an id it
    does not know keeps its words."""
    words = name.split("_")
    head, tail = [], []
    if words and words[0] == "order":
        head.append("orders:")
        words = words[1:]
    if words and words[0] == "hard":
        tail.append("(hard-data model)")
        words = words[1:]
    body, grade = [], None
    for i, w in enumerate(words):
        if w.startswith("dev") and w[3:].isdigit() and i + 1 < len(words) and words[i + 1].isdigit():
            tail.insert(0, f"(dev puzzles {w[3:]}-{words[i + 1]})")
        elif w.isdigit() and i > 0 and words[i - 1].startswith("dev"):
            continue
        elif w in GRADES:
            grade = w
        elif w == "dev":
            tail.insert(0, "(dev split)")
        elif w == "exact" and i + 1 < len(words) and words[i + 1] in ("true", "false"):
            body.append("relative budget" if words[i + 1] == "true" else "absolute budget")
        elif w in ("true", "false"):
            continue
        elif w.startswith("kl"):
            body.append(f"KL {w[2:]}")
        else:
            body.append(SET_WORDS.get(w, w))
    text = " ".join(head + body) + (f", {grade} puzzles" if grade else "")
    return " ".join([text.strip(), *tail]).strip() or name


def opening_set(rows: list[dict], sets: list[str], preferred: set[str] = frozenset()) -> str:
    """The set the page opens on: the first with MI-guided (``mi``...) and learned-order rows, those in
    ``preferred`` (the sets measured on the shipped default: :func:`sets_on_model`) first; else the one with the
    most samplers (the first shipped set had only sequential and top-k)."""
    samplers = {s: {r["sampler"] for r in rows if r["set"] == s} for s in sets}

    def has(s: str, prefix: str) -> bool:
        return any(name == prefix or name.startswith(prefix + "_") for name in samplers[s])

    both = [s for s in sets if has(s, "mi") and has(s, "learned")]
    return ([s for s in both if s in preferred] or both or [max(sets, key=lambda s: len(samplers[s]))])[0]


def sets_of_kind(rows: list[dict], sets: list[str], sequence: bool) -> list[str]:
    """The sets of ``sets`` scored like a sequence domain's (a distance, lower is better) when ``sequence``,
    else those scored like Sudoku's (accuracy)."""
    return [s for s in sets if metric_of([r for r in rows if r["set"] == s]).higher != sequence]


def sets_of_domain(rows: list[dict], sets: list[str], domain) -> list[str]:
    """The sets of ``sets`` run on ``domain``: each of their rows names it (its ``domain``, or the ``sweep`` command
    that wrote it: :func:`~mi_core.bench.report.ran_on`), or names no domain and carries the headline figure
    of the domain's metric (its ``score``: an antibody's ``recovery``)."""
    score = getattr(domain.metric, "score", None)

    def of(row: dict) -> bool:
        on = ran_on(row, domain)
        return score is not None and score in row if on is None else on

    return [s for s in sets if all(of(r) for r in rows if r["set"] == s)]


def sets_on_model(rows: list[dict], model_sha: str | None) -> set[str]:
    """The sets whose rows record the model of sha256 ``model_sha`` (``model_sha256``, which newer runs write),
    read in one view (a row with ``views`` > 1 ran an ensemble of it)."""
    return {r["set"] for r in rows if model_sha and r.get("model_sha256") == model_sha and r.get("views", 1) == 1}


def metric_of(rows: list[dict]) -> Metric:
    """The quality measure the rows share (the first of :data:`METRICS` they all carry)."""
    for metric in METRICS:
        if rows and all(metric.key in r for r in rows):
            return metric
    raise ValueError("the rows share no quality measure (accuracy, jsd_dipeptide or recovery)")


def set_domain(rows: list[dict]):
    """The registered Domain every row of a set ran on (:func:`~mi_core.bench.report.row_domain`), or None where
    they name none (the shipped Sudoku sweeps), several, or one not registered now."""
    names = {row_domain(r) for r in rows}
    if len(names) != 1 or None in names:
        return None
    try:
        return get_domain(names.pop())
    except ValueError:
        return None


def worded_metric(metric: Metric, domain) -> Metric:
    """``metric`` in the words of ``domain``, the domain its set ran on (:func:`set_domain`): a sequence domain's
    accuracy is the share of its states decoded right, not of puzzles solved (a grid's, or None: as it is)."""
    if metric.key != "accuracy" or domain is None or domain.layout == "grid":
        return metric
    return replace(metric, title=f"{domain.short} states right (%)")


def pareto(rows: list[dict], metric: Metric) -> list[dict]:
    """Rows no other row beats on both counts (no more passes and a better ``metric``), by passes; rows tied on
    both with a frontier row are on it too (only one of them was listed)."""
    sign = 1.0 if metric.higher else -1.0
    best, out = -float("inf"), []
    for row in sorted(rows, key=lambda r: (r["mean_passes"], -sign * r[metric.key])):
        value = sign * row[metric.key]
        tied = bool(out) and (row["mean_passes"], value) == (out[-1]["mean_passes"], best)
        if value > best or tied:
            out.append(row)
            best = value
    return out


def params_label(params) -> str:
    if isinstance(params, dict):
        return params_text(params) or "defaults"
    return str(params)


def series_name(row: dict) -> str:
    """A row's sampler as the page names it: a run averaged over symmetric views or decoding again while the rules
    break is a series of its own ("mi, up to 32 decodes"), not a point among the sampler's single decodes."""
    return ", ".join([str(row["sampler"]), *variants(row)])


# what makes two rows the same run but for their seed (the rest are what it measured)
RUN_FIELDS = ("set", "sampler", "params", "T", "matched", "model", "attempts", "views", "iterations", "temperature",
              "puzzles", "level", "limit", "lengths", "samples", "reference", "reference_split")


def binomial_se(row: dict, metric: Metric) -> float | None:
    """One binomial standard error of a row's share of solved items, ``sqrt(p (1 - p) / n)``, in the metric's
    display scale (points for accuracy); None for a metric that is not a share of the row's n items (JSD; recovery,
    a mean over chains of each one's share of residues) or a row averaged over seeds (its spread over them is its
    ``_sd``)."""
    if not metric.binomial or "seeds" in row or not int(row.get("n") or 0):
        return None
    p, n = float(row[metric.key]), int(row["n"])
    return metric.scale * math.sqrt(p * (1 - p) / n)


def mean_over_seeds(rows: list[dict], key: str) -> list[dict]:
    """Rows of one run under two or more seeds as one point (in the first's place): ``key`` and the mean passes
    averaged, ``seeds`` how many, ``KEY_sd`` the sample sd of ``key`` over them. A run is what
    :data:`RUN_FIELDS` name; a row whose run has one seed is kept as it is."""
    groups: dict[str, list[dict]] = {}
    for r in rows:
        run = json.dumps({k: r.get(k) for k in RUN_FIELDS}, sort_keys=True, default=str)
        groups.setdefault(run, []).append(r)
    out = []
    for group in groups.values():
        seeds = {r.get("seed") for r in group}
        if len(seeds) < 2 or len(seeds) != len(group):  # one seed, or a seed twice: not one run's repeats
            out += group
            continue
        values = [float(r[key]) for r in group]
        row = {k: v for k, v in group[0].items() if k != "seed"}
        out.append(row | {key: statistics.fmean(values), f"{key}_sd": statistics.stdev(values), "seeds": len(group),
                          "mean_passes": statistics.fmean(float(r["mean_passes"]) for r in group)})
    return out


def _rows_of(data, path: Path) -> list[dict] | None:
    """Normalised rows of one file's JSON, or None when it is not a sweep."""
    if isinstance(data, dict):
        data = data.get("rows")
    if not isinstance(data, list) or not data:
        return None
    if not all(isinstance(r, dict) and all(k in r for k in REQUIRED) for r in data):
        return None
    try:
        metric = metric_of(data)
    except ValueError:
        return None
    data = mean_over_seeds(data, metric.key)
    out = []
    for r in data:
        series = series_name(r)
        out.append({**r, "set": set_name(str(r.get("set") or path.stem)), "sampler": series, "base": str(r["sampler"]),
                    metric.key: float(r[metric.key]), "mean_passes": float(r["mean_passes"]), "n": int(r["n"]),
                    "label": f"{series} ({params_label(r['params'])})"})
    return out


def load_rows(directory: Path | None = None) -> BenchRows:
    """Every sweep row under ``directory`` (default :func:`bench_dir`), in file-name order."""
    directory = bench_dir() if directory is None else directory
    found = BenchRows()
    if not directory.is_dir():
        return found
    per_file = []
    for path in sorted(directory.glob("*.json")):
        try:
            rows = _rows_of(json.loads(path.read_text()), path)
        except (OSError, ValueError, TypeError):
            rows = None
        if rows is None:
            found.skipped.append(path.name)
            continue
        per_file.append((path, rows))
        found.files.append(path.name)
    # a set id several files share (a rerun on another model kept its --name) is one set per file, by file name,
    # and per set within a file that holds several (foundation.json: three puzzle files, one set each)
    owners: dict[str, set[str]] = {}
    for path, rows in per_file:
        for r in rows:
            owners.setdefault(r["set"], set()).add(path.name)
    for path, rows in per_file:
        sets = {r["set"] for r in rows}
        if all(len(owners[s]) == 1 for s in sets):
            found.rows += rows
        else:
            stem = set_name(path.stem)
            found.rows += [{**r, "set": f"{stem}_{r['set']}" if len(sets) > 1 else stem} for r in rows]
    return found
