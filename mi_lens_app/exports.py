"""Downloads: MI matrices as CSV and JSON, decoding traces as JSON, figures as standalone HTML.

Pure functions over the app's results (no streamlit, no torch); each returns the file's text, or a CSV's bytes.
"""

from __future__ import annotations

import csv
import io
import json
from html import escape

import numpy as np
import plotly.graph_objects as go

from mi_core.domains.protein.tokens import AMINO_ACIDS
from mi_core.io import json_ready
from mi_lens_app.domains import get_domain


def mi_csv(mi: np.ndarray, labels: list[str], masked: np.ndarray, noun: str = "cell") -> bytes:
    """An ``(N, N)`` matrix as CSV with position labels as the header row and first column (headed ``noun``, the
    domain's word for a position), and a ``masked`` column (1 for a position the model fills, 0 for a given one,
    whose row and column hold no MI) after the labels.

    UTF-8 with a byte-order mark: Excel reads a CSV without one in the local code page, and a label such as an
    antibody's ``W99·H3`` came out garbled; Python reads it back with ``encoding="utf-8-sig"``."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([noun, "masked", *labels])
    for label, hidden, row in zip(labels, np.asarray(masked, bool), np.asarray(mi, float), strict=True):
        writer.writerow([label, int(hidden), *(f"{v:.8g}" for v in row)])
    return buf.getvalue().encode("utf-8-sig")


UNITS = {"mi": "nats", "entropy": "nats", "marginals": "probability", "seconds": "s"}


def known_state(domain, pz) -> dict:
    """What a download needs to be read alone: ``values``, the name of each marginal's column (``marginals[i][v]``
    is p(value ``values[v]``)), and the state before masking: a sequence's ``native`` (its residues where they were
    masked; ``_`` where unknown too) or a grid's unique ``solution``, left out where there is none."""
    solution = pz.solution_text
    return {"values": list(domain.alphabet), **({reference(domain): solution} if solution else {})}


def reference(domain) -> str:
    """What a decode of ``domain`` is scored against, as the downloads name it: a grid's unique ``solution`` (its
    rules give one), else a sequence's ``native`` (the state before masking; many sequences fold alike)."""
    return "solution" if domain.layout == "grid" else "native"


def mi_json(mi_map, puzzle: str, domain: str, labels: list[str], model: str | None = None,
            model_description: str | None = None, known: dict | None = None) -> str:
    """An :class:`~mi_lens_app.core.MIMap` (or anything with the same fields) as JSON. ``domain`` and ``model``:
    as :func:`mi_lens_app.domains.named` gives them (the model only when one of a domain's second models ran);
    ``model_description``: the line naming the model that ran and its file (``support.model_info``), since a
    variable or ``auto`` may pick another than the domain's default; ``known``: :func:`known_state`."""
    return json.dumps(json_ready({
        "domain": domain, **({"model": model} if model else {}), **_described(model_description), "puzzle": puzzle,
        **(known or {}), "units": UNITS, "source": mi_map.source, "passes": mi_map.passes,
        "seconds": mi_map.seconds, "labels": labels, "masked": mi_map.masked, "entropy": mi_map.entropy,
        "marginals": mi_map.marginals, "mi": mi_map.mi,
    }))


def bench_command(trace, temperature: float, seed: int, domain_options: list[str]) -> str:
    """The command line that decodes the trace's puzzle again as the page did (``PUZZLE_FILE``: a file holding the
    puzzle on its one line; ``bench`` seeds a file's one puzzle as the page seeds its decode). ``domain_options``:
    :func:`mi_lens_app.domains.bench_domain_options`."""
    def text(value) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)

    sets = [f"--set {key}={text(value)}" for key, value in trace.params.items() if value is not None]
    attempts = ["--attempts", str(trace.attempts)] if trace.attempts > 1 else []
    return " ".join(["python -m mi_core bench", domain_options[0], "--puzzles PUZZLE_FILE", "--sampler",
                     trace.strategy, *sets, "--temperature", f"{temperature:g}", "--seed", str(seed), *attempts,
                     *domain_options[1:]])


def _described(model_description: str | None) -> dict:
    return {"model_description": model_description.removeprefix("Model: ").removesuffix(".")} if model_description else {}


def trace_words(domain, scored: bool = True) -> dict[str, str]:
    """The keys of a trace of ``domain`` in its own words: its nouns for a position and a value (``cell`` and
    ``digit``; ``residue`` and ``amino_acid``), its layout for a state (``grid``, ``sequence``), and what a decode
    is scored against: a solution is ``solved`` or has ``errors``; a native sequence is matched or differed from;
    a sequence with none known (not ``scored``) is ``filled``, its errors the domain's ``rule_conflicts``."""
    position, value = (noun.replace(" ", "_") for noun in domain.nouns)
    word = reference(domain)
    if word == "solution":
        scored_by = {"outcome": "solved", "errors": "errors"}
    elif scored:
        scored_by = {"outcome": f"matches_{word}", "errors": f"differs_from_{word}"}
    else:  # no native to match: the decode is whole with no rule broken (a protein's rules: none)
        scored_by = {"outcome": "filled", "errors": "rule_conflicts"}
    return {"position": position, "value": value, "state": domain.layout, **scored_by}


def _step(s, spec, labels: list[str], words: dict[str, str]) -> dict:
    """One frame of a trace (:func:`trace_json`)."""
    chosen = np.flatnonzero(s.chosen)
    written = s.tokens if s.written is None else s.written  # the value written, also where masked again at once
    return {
        "step": s.step, words["state"]: spec.state_text(s.tokens),
        "unmasked": [{words["position"]: labels[c], "index": int(c), words["value"]: spec.alphabet[int(written[c]) - 1],
                      "entropy": s.entropy[c], "confidence": s.confidence[c]} for c in chosen],
        "remasked": [labels[c] for c in np.flatnonzero(s.remasked)], "passes": s.passes,
        "extra_passes": s.extra_passes, "budget_spent": s.budget_spent, "mi_among": s.mi_among, "mi_max": s.mi_max,
        words["errors"]: [labels[c] for c in np.flatnonzero(s.errors)], "info": s.info,
        **({"per_position": s.maps} if s.maps else {}),  # e.g. the order selector's select_prob, (N,) each
    }


def trace_json(trace, puzzle: str, domain: str, labels: list[str], temperature: float, seed: int,
               model: str | None = None, command: str | None = None, model_description: str | None = None,
               known: dict | None = None) -> str:
    """A :class:`~mi_lens_app.traces.Trace` as JSON: one entry per frame, the positions unmasked with their values
    and entropies, keyed in the domain's own words (:func:`trace_words`); states are written as the domain writes
    them (its mask symbol for masked).

    ``domain`` and ``model``: as for :func:`mi_json`. A trace decoded again records which decode its steps are
    (mapped back to the puzzle) and the passes of those before it. ``command``: the command line that decodes it
    again (:func:`bench_command`), where there is one; ``model_description`` and ``known`` (the native sequence or
    solution the steps' errors are counted against): as for :func:`mi_json`."""
    spec = get_domain(domain)
    words = trace_words(spec, reference(spec) in (known or {}))  # errors counted against it only where known
    return json.dumps(json_ready({
        "domain": domain, **({"model": model} if model else {}), **_described(model_description), "puzzle": puzzle,
        **(known or {}), "strategy": trace.strategy, "params": trace.params,
        "temperature": temperature, "seed": seed,
        **({"command": command, "command_note": "PUZZLE_FILE: a file holding the puzzle on its one line"}
           if command else {}),
        "mi_source": trace.mi_source, words["outcome"]: trace.solved,
        "stopped": trace.stopped, "seconds": trace.seconds,
        **({"decodes_at_most": trace.attempts, "decode": trace.attempt, "rejected_decodes": trace.rejected,
            "earlier_passes": trace.earlier_passes} if trace.attempts > 1 else {}),  # steps: the shown decode's
        "steps": [_step(s, spec, labels, words) for s in trace.steps],
    }))


def figure_html(fig: go.Figure) -> str:
    """A standalone HTML page with plotly.js inlined (opens offline)."""
    return fig.to_html(full_html=True, include_plotlyjs=True)


PLAYER_TEMPLATE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MI Lens: decoding</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body { font-family: Inter, Arial, sans-serif; margin: 1.5rem; color: #111; }
.runs { display: flex; flex-wrap: wrap; gap: 2.5rem; }
.run h2 { font-size: 1.3rem; margin: 0 0 0.3rem; } .run p { margin: 0 0 0.6rem; font-size: 1.1rem; }
.grid { display: grid; border: 3px solid #333; width: min(80vw, 540px); aspect-ratio: 1; }
.grid div { display: flex; align-items: center; justify-content: center; font-size: min(4.5vw, 30px);
            border: 0.5px solid #bbb; box-sizing: border-box; }
.seq { display: flex; flex-wrap: wrap; max-width: 90vw; font-family: monospace; font-size: 20px; }
.seq div { width: 1.3em; text-align: center; border: 2px solid transparent; }
.given { font-weight: bold; color: #111111; } .filled { color: #1f5fbf; } .wrong { color: #d62728;
  text-decoration: underline 3px; text-underline-offset: 3px; }
.masked { color: #aaa; } .chosen { outline: 3px solid #ff7f0e; outline-offset: -4px; }
.bar { margin: 1rem 0; display: flex; gap: 0.6rem; align-items: center; font-size: 1.1rem; }
button { font-size: 1.1rem; padding: 0.3rem 0.9rem; } input[type=range] { width: 40vw; }
.legend { color: #444; }
.legend .sample { outline: 3px solid #ff7f0e; padding: 0 0.15em; margin: 0 0.4em 0 0.25em; }  /* clear of the colon */
</style></head><body>
<h1>Decoding, step by step</h1>
<div class="bar"><button id="play">Play</button><button id="prev">&lt;</button><button id="next">&gt;</button>
<input id="slider" type="range" min="0" value="0"><span id="label"></span></div>
<p class="legend">Black: given · <span class="filled">blue</span>: filled by the model · <span class="wrong">red, underlined</span>:
__WRONG__ · <span class="sample">orange outline</span>:
unmasked together at this step. Space plays and pauses; the arrow keys step.</p>
<div class="runs" id="runs"></div>
<script>
const DATA = __DATA__;
const count = Math.max(...DATA.runs.map(r => r.frames.length));
let step = 0, timer = null;
const slider = document.getElementById("slider"); slider.max = count - 1;
function cell(run, frame, c) {
  const d = document.createElement("div"); const ch = frame.state[c];
  d.textContent = ch === "." ? (DATA.box ? "" : "_") : ch;
  d.className = ch === "." ? "masked" : DATA.givens[c] ? "given" : frame.errors.includes(c) ? "wrong" : "filled";
  if (frame.chosen.includes(c)) d.classList.add("chosen");
  if (DATA.box) { const n = DATA.n, r = Math.floor(c / n), k = c % n;
    if (k % DATA.box === 0) d.style.borderLeft = "3px solid #333"; if (r % DATA.box === 0) d.style.borderTop = "3px solid #333"; }
  return d;
}
function draw() {
  const root = document.getElementById("runs"); root.innerHTML = "";
  for (const run of DATA.runs) {
    const frame = run.frames[Math.min(step, run.frames.length - 1)];
    const box = document.createElement("div"); box.className = "run";
    box.innerHTML = `<h2>${run.strategy}</h2><p>step <b>${frame.step} / ${run.frames.length - 1}</b> · passes `
      + `<b>${frame.passes}</b> · unmasked <b>${frame.chosen.length}</b> · ${DATA.marked} <b>${frame.errors.length}</b></p>`;
    const board = document.createElement("div"); board.className = DATA.box ? "grid" : "seq";
    if (DATA.box) board.style.gridTemplateColumns = `repeat(${DATA.n}, 1fr)`;
    for (let c = 0; c < frame.state.length; c++) board.appendChild(cell(run, frame, c));
    box.appendChild(board); root.appendChild(box);
  }
  slider.value = step; document.getElementById("label").textContent = `step ${step} of ${count - 1}`;
}
function go(s) { step = Math.max(0, Math.min(count - 1, s)); draw(); if (step >= count - 1) stop(); }
function stop() { clearInterval(timer); timer = null; document.getElementById("play").textContent = "Play"; }
function play() { if (timer) return stop(); if (step >= count - 1) step = 0;
  timer = setInterval(() => go(step + 1), 800); document.getElementById("play").textContent = "Pause"; draw(); }
document.getElementById("play").onclick = play;
document.getElementById("prev").onclick = () => go(step - 1);
document.getElementById("next").onclick = () => go(step + 1);
slider.oninput = () => go(+slider.value);
document.addEventListener("keydown", e => {
  if (e.code === "Space") { e.preventDefault(); play(); }
  else if (e.code === "ArrowRight") go(step + 1); else if (e.code === "ArrowLeft") go(step - 1); });
draw();
</script></body></html>
"""


def decoding_player_html(traces, puzzle: str, givens: list[bool], values: tuple[str, ...],
                         box: int | None = None, native: str = "native") -> str:
    """One self-contained HTML page (no network, no library) that plays decodings frame by frame: a grid for a
    Sudoku (``box``: its box side) or a line of letters for a sequence (``box`` None); play/pause with Space.

    Args:
        traces: :class:`~mi_lens_app.traces.Trace` objects of the same puzzle; puzzle: its state string;
        givens: ``(N,)`` given positions; values: the name of each value (token ``v + 1``); native: a sequence's
        word for the sequence it was given (``original`` outside proteins). A sequence's residues that differ from
        it are counted as such, not as wrong, as the page counts them (many sequences fold alike).
    """
    def state(tokens) -> str:
        return "".join("." if t == 0 else values[int(t) - 1] for t in tokens)

    runs = [{"strategy": t.strategy, "frames": [
        {"step": s.step, "state": state(s.tokens), "passes": s.passes + s.extra_passes,
         "chosen": np.flatnonzero(s.chosen).tolist(), "errors": np.flatnonzero(s.errors).tolist()}
        for s in t.steps]} for t in traces]
    n = round(len(givens) ** 0.5)
    wrong = "wrong" if box else f"differs from {native}"
    data = {"puzzle": puzzle, "givens": [bool(g) for g in givens], "box": box, "n": n, "runs": runs, "marked": wrong}
    fold = " (not an error: many sequences fold alike)" if "".join(values) == AMINO_ACIDS else ""  # a protein's
    legend = "wrong (differs from the solution)" if box else f"differs from the {escape(native)} sequence{fold}"
    return PLAYER_TEMPLATE.replace("__WRONG__", legend).replace("__DATA__", json.dumps(data).replace("</", "<\\/"))
