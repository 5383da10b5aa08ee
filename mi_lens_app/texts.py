"""Explanations shown beside the plots (Markdown with LaTeX; no streamlit here)."""

import re
from math import ceil

import numpy as np

from mi_core.domains.protein.tokens import AMINO_ACIDS
from mi_core.options import plural  # the pages' word for several of a Domain's nouns (Domain.plurals)

MDM = r"""
**Masked diffusion models.** An MDM fills a sequence by unmasking positions. Given the visible context
$C$ it outputs, for every masked position $j$, a distribution $p(X_j \mid C)$ over values (here digits):
its *marginal*. Its *entropy* $H(X_j \mid C) = -\sum_v p(v) \log p(v)$ (nats) says how unsure it is.
A decoder runs one forward pass per step and writes values into some masked positions.
"""

MI = r"""
**Mutual information.** Marginals say nothing about which positions depend on each other. The
conditional mutual information

$$I(X_i; X_j \mid C) = H(X_j \mid C) - \sum_v p(X_i = v \mid C)\, H(X_j \mid X_i = v, C)$$

is the entropy of $j$ that learning $i$ removes on average: 0 when $i$ tells nothing about $j$, up to
$\min(H_i, H_j)$ when one decides the other. In Sudoku, two blanks of the same row that are both unsure
between 4 and 7 share a lot of it.
"""

PARALLEL = r"""
**Parallel decoding.** Unmasking $k$ positions in one pass samples them *independently* from their
marginals. With $H_i = H(X_i \mid C)$ and $H_U = H(X_U \mid C)$, the cost of that independence is

$$\mathrm{KL}\Big(p(X_U \mid C)\,\Big\Vert\,\prod_{i\in U} p(X_i \mid C)\Big) = \sum_{i\in U} H_i - H_U \le \sum_{i\in U} H_i,$$

and for a pair it is exactly $I(X_i; X_j \mid C)$. So a decoder can safely unmask positions that are each
confident (low $H$) *and* nearly independent (low MI). The MI-guided sampler spends a budget $\gamma$:
visiting positions by entropy, it accepts $i$ while $H_i + \lambda \sum_{j \in U} I(i; j) \le$ the budget
left; the EB-Sampler uses entropies only.
"""

PROBE = r"""
**Exact probe.** Write each value $v$ into masked $i$ and run the model: $r_v = p(X_j \mid X_i = v, C)$ for
every other $j$. Then $I(i \to j) = H(\bar q_j) - \sum_v p_v H(r_v)$ with $\bar q_j = \sum_v p_v r_v$.
It costs $1 + N|V|$ passes for $N$ blanks. A real MDM's conditionals need not agree with each other, so
$I(i \to j) \ne I(j \to i)$ in general: the *asymmetry* measures that inconsistency. Pruning skips values
with $p_v < \varepsilon$ (never the most likely), saving passes at a bounded error.
"""

ESTIMATOR = r"""
**Neural estimator.** A small head reads the model's hidden states and marginals from the *same* pass
the decoder already runs and predicts the whole $N \times N$ MI matrix, trained to match the exact probe.
It costs no extra model pass, which is what makes MI-guided decoding cheap.
"""

MAPS_PAGE = r"""
The **heatmap** is the $N \times N$ MI matrix (row-major: rows of the grid one after another; box-major:
boxes one after another, so the box constraint shows as blocks on the diagonal). The **grid** beside it
(above it on a narrow screen) shows one row of it, the MI between the selected cell and every other cell. The **dependency
graph** keeps the strongest pairs: blue solid edges join cells that share a row, column or box (a
Sudoku rule), red dashed edges join cells that share none: dependencies the model sees through chains
of rules. Click a cell on the grid (or pick it above) to select it.
"""

EXACT_PAGE = r"""
First the fast map (estimator, or a pruned probe when no estimator is shipped) and the exact probe of the
same state, then their difference (red: estimate too high) and a scatter of every masked pair, exact against
estimated (on the dashed line they agree; hover or click a pair for both values). Spearman compares the
rankings of all masked pairs; the top-$k$ overlap asks whether the strongest pairs agree, which is what a
decoder uses. The asymmetry map shows $|I(i\to j) - I(j\to i)|$, where the model's conditionals disagree.
"""

DECODE_PAGE = r"""
Each frame is one forward pass. Orange outlines mark the cells unmasked together at this step; their
entropies and the MI among them say how risky the group was (independent sampling of dependent cells is
how two equal digits end up in one row). Red underlined digits are wrong. Passes count the model's forward passes:
fewer passes is faster decoding; the question is how few you can afford before errors appear.
Under `learned`, a second grid shows its trained order selector's probability of unmasking each masked
cell at that step, within a budget of T steps.
"""

WHATIF_PAGE = r"""
Clamp a blank cell to a digit and watch the model update: the marginals $p(X_j \mid X_i = v, C)$ of
every other cell (the probe's conditional view) and their entropies. The MI of the clamped cell with
cell $j$ is the *average* entropy drop of $j$ over all digits weighted by $p(X_i = v \mid C)$; a single
digit can lower or raise an entropy.
"""

WHATIF_SEQUENCE_PAGE = r"""
Clamp a masked residue to one amino acid and watch the model update: the marginals $p(X_j \mid X_i = v, C)$ of
every other residue (the probe's conditional view) and their entropies. The MI of the clamped residue with
residue $j$ is the *average* entropy drop of $j$ over all amino acids weighted by $p(X_i = v \mid C)$; a single
amino acid can lower or raise an entropy.
"""

BENCH_PAGE = r"""
Each point is one sampler with one setting, run over a puzzle set: accuracy (whole grid right) against
mean forward passes per puzzle. Up and to the left is better; the dashed line is the frontier over all
settings (points of one sampler are not joined: its settings vary in several knobs). Results are read from `assets/benchmarks/*.json`, written by `python -m mi_core sweep`.
"""

def bench_page(key: str, domain=None) -> str:
    """What the Benchmarks page's points are, for a set scored by metric ``key`` and run on ``domain`` (None: a
    shipped Sudoku sweep, which names none): a sequence domain's accuracy in its own words."""
    if key == "recovery":
        return ANTIBODY_BENCH_PAGE
    if key != "accuracy":
        return PROTEIN_BENCH_PAGE
    if domain is None or domain.layout == "grid":
        return BENCH_PAGE
    right = ("the domain's own check accepts it" if not getattr(domain.metric, "needs_solution", True) else
             f"every {domain.nouns[0]} is the solution's")
    return (f"Each point is one sampler with one setting, run over a set of {domain.label} states: accuracy (the "
            f"share of states decoded right: {right}) against mean forward passes per state. Up and to the left is "
            "better; the dashed line is the frontier over all settings. Results are read from "
            "`assets/benchmarks/*.json`, written by `python -m mi_core sweep`.")


PROTEIN_BENCH_PAGE = r"""
Each point is one sampler with one setting, generating protein sequences: how far the generated sequences'
dipeptide statistics are from those of real CATH domains (Jensen-Shannon divergence, lower is better)
against mean forward passes per sequence. Down and to the left is better; the dashed line is the frontier.
"""

ANTIBODY_BENCH_PAGE = r"""
Each point is one sampler with one setting, in-filling antibody CDRs: the share of native residues recovered
against mean forward passes per chain. Up and to the left is better; the dashed line is the frontier.
"""

SEQUENCE_MAPS_PAGE = r"""
**Sequences.** The state is a sequence with some residues masked; the model fills them. The **heatmap** is
the $L \times L$ MI matrix along the sequence (each residue named by its letter and place, `_7` for a masked
one; only masked residues carry MI, so given ones stay dark). A sequence longer than 60 residues is shown 60
at a time, opening on the masked ones (a *Window* of 120 or 200 shows more in smaller letters). The
**contact-map view** keeps the strongest pairs at least $|i-j|$ apart, as dots above the diagonal⟦: in a
trained protein model, pairs far apart in sequence that still share MI often sit close in the folded
structure, as co-evolving contacts do⟧. The **arc graph** draws the strongest pairs as arcs along the
sequence (capped, so long sequences stay responsive). The **strip** shows each masked residue's entropy,
its MI with the selected residue, and its marginal over every amino acid.
"""

# measured with the mi defaults on the first protein preset, whose 12 masked residues argmax fills with G
PROTEIN_ARGMAX = ("Temperature 0 takes each residue's likeliest value. The small protein MDM (trained on CATH, barely "
                  "better than amino-acid composition) then repeats one residue over a masked stretch, such as 12 G's "
                  "in the first preset; temperature 1 samples from its marginals, as the protein benchmarks do.")

SEQUENCE_DECODE_PAGE = r"""
Each row of the strip is one forward pass: the residues filled so far, an orange bar over the ones
unmasked together at that step, a red bar under a residue that differs from the native sequence (the one
given before masking)⟦. Differing from the native sequence is not an error (many sequences fold alike); the share that
matches, *native recovery*, is the usual yardstick of protein sequence design⟧. Under `learned`, bars
show its trained order selector's probability of unmasking each masked residue at that step, within a
budget of T steps. A sequence longer than 60 residues is shown 60 at a time, opening on the masked ones;
a *Window* of 120 or 200 shows more in smaller letters, and dragging across the strip zooms in
(double-click zooms out).
"""

LEARNED_ORDER = r"""
**Learned orders.** Instead of a rule (fill the surest cells, or those that share little MI), a small network,
the *order selector*, reads the model's hidden states and decides which masked positions to fill at each pass.
It is trained against a second network that sees more (a posterior over orders) by maximising a lower bound on
how well the model then fills the sequence (REINFORCE with a leave-one-out baseline). Given a budget of $T$
passes it fills many cells on an easy grid and few on a hard one: the `learned` strategy on the Decoding page
shows its probability of unmasking each cell.
"""

ANTIBODIES = r"""
**Antibodies.** An antibody's variable domain holds three loops (CDRs) that touch the antigen. AntiBERTy
(Ruffolo, Gray and Sulam 2021), a masked language model of 558M antibody sequences, reads it in one pass;
MI Lens probes it as it probes the MDMs, marks the CDRs by sequence rules (Kabat), and asks which masked
residues depend on which, within a loop and between the loops and the framework: pick **antibody** under
*Domain* in the sidebar.
"""

ITERATIONS_ABOUT = r"""
**Iterations.** The default Sudoku model is recurrent: one block applied 24 times a pass. The MI maps page
reads its belief after any iteration (the *Iteration* slider), shows where each blank cell settles, and can
run the exact probe at an iteration.
"""

PROTEINS = r"""
**Proteins.** The same questions hold for a protein sequence: a masked diffusion model over the 20 amino
acids fills masked residues, and the MI between two masked residues says how much knowing one tells
about the other. Neighbours along the chain share MI; so, in a good model, do residues far apart in
sequence that touch in the folded structure. MI-guided decoding avoids filling strongly dependent
residues in the same pass. Preset sequences are CATH S40 domains (CC BY 4.0); paste or upload your own.
"""


DECODE_LEGEND = (
    "**Black** digits were given · :blue[**blue**] digits the model filled · :red[**red, underlined**] digits are wrong · "
    ":orange[**orange outline**]: unmasked together at this step · :violet[**dotted purple**]: remasked · "
    "cell colour: how unsure the model was (entropy) before this step"
)

SEQUENCE_LEGEND = (
    "Each row is one step · letters: residues (`_` still masked) · :orange[**orange bar over**]: unmasked together "
    "at this step · :red[**red bar**]: differs from the native sequence · colour: the step that filled a residue "
    "(or its entropy)"
)


# what each decoding strategy does, for a student; the registry's docstrings (shown in an expander) are the
# technical form
def candidates_legend(n_values: int = 9) -> str:
    return (f"Pencil marks: each blank cell shows every digit at its own place in the cell (1 top left, {n_values} "
            "bottom right), more opaque the more probable it is (the model's marginal p(digit | context); solid from "
            "0.5).")

STRATEGY_PLAIN = {
    "mi": "Fills several cells per pass, but only cells the model is sure of that also say little about each "
          "other (low mutual information), so it does not write two guesses that depend on each other at once. "
          "gamma: how much risk a pass may take; lam: how much dependence counts against a group.",
    "mi_exact": "Like mi, but measures the dependence between cells exactly, by asking the model once per "
                "possible digit of every cell (eps: digits less likely than this are skipped, which bounds the "
                "error). Far slower; it shows what mi could do with perfect information.",
    "learned": "A small network trained for this model decides which cells to fill at each pass, within a budget "
               "of steps; mode says how its scores turn into a choice.",
    "learned_mi": "The trained network's scores as the risk of each cell, with mi's rule against filling "
                  "dependent cells together, within a budget of steps.",
    "sequential": "One cell per pass: always the one the model is surest of. Slow but careful; the baseline.",
    "random": "Fills k random cells per pass (or spreads them over a fixed number of steps): what happens with "
              "no idea of which cells are safe.",
    "topk": "Fills the k cells the model is surest of (lowest entropy) at each pass. Fast, but two sure-looking "
            "cells can still clash.",
    "top_prob": "Fills the k cells whose most likely digit is most probable at each pass.",
    "top_margin": "Fills the k cells where the best digit leads the second best by the widest margin.",
    "eb": "Fills the surest cells together until their total uncertainty would pass a budget gamma; at least one "
          "per pass (the EB-Sampler).",
    "threshold": "Fills every cell whose best digit is at least tau likely, and always the surest one "
                 "(Fast-dLLM).",
    "mask_predict": "Fills everything at every pass, then hides again the least confident cells and retries, over "
                    "a fixed number of passes (Mask-Predict).",
}


_NOUNS = re.compile(r"\b(cell|residue|digit|amino acid)(s?)\b", re.IGNORECASE)
_PROTEIN_ONLY = re.compile(r"⟦(.*?)⟧", re.DOTALL)  # a passage true of proteins only (folding, native recovery)


def speaks_protein(domain) -> bool:
    """Whether ``domain``'s values are the 20 amino acids: its input is then a sequence or FASTA with protein
    presets, and its texts speak of folding and native sequences; any other sequence domain takes its own states."""
    return "".join(domain.alphabet) == AMINO_ACIDS


def pair_map_name(domain) -> str:
    """The MI maps page's chart of the strongest pairs far apart: a protein's contact-map view, else a pair map
    (contacts are a folded chain's; a word or a necklace has pairs)."""
    return "Contact-map view" if speaks_protein(domain) else "Pair map"


def worded(text: str, domain) -> str:
    """``text`` written for a grid (cells, digits) or a protein (residues, amino acids) in ``domain``'s own nouns
    (``Domain.nouns``: a position, a value); passages marked ⟦...⟧ are kept for a protein only."""
    protein = speaks_protein(domain)
    text = _PROTEIN_ONLY.sub(lambda m: m.group(1) if protein else "", text)
    if domain.layout == "grid":
        return text
    position, value = domain.nouns
    if not protein:  # "native" is a protein's word for the sequence as found; here, the state as typed
        text = re.sub(r"\bnative sequence\b", "original state", text)
        text = re.sub(r"\bnative\b", "original", text)
        text = re.sub(r"\bcontact-map view\b", "pair map", text)

    def swap(m: re.Match) -> str:
        noun = position if m.group(1).lower() in ("cell", "residue") else value
        word = plural(noun) if m.group(2) else str(noun)
        return word[0].upper() + word[1:] if m.group(1)[0].isupper() else word

    return _NOUNS.sub(swap, text)


def app_wording(message: str) -> str:
    """An error of the core reworded for someone using the app, who passes no arguments to functions."""
    return message.replace("this puzzle has more than one solution",
                           "this puzzle has more than one solution, and decoding scores its digits against one "
                           "(add givens until one is left). The MI maps, What-if and Exact vs estimated pages "
                           "show a grid with several solutions, the empty grid too")


WEAK_MI = 0.05  # nats: below it, no pair of the map is worth a lesson (a 9x9 puzzle's strongest pairs reach 1 nat)


def weak_mi(largest: float, unsure: bool = False, noun: str = "cell") -> str:
    """Why a map of weak MI still fills the colour scale (percentile colours rank the pairs). ``unsure``: the
    masked positions' entropy is near its maximum, so the weakness is the model's, not the state's. ``noun``: one
    position (``"cell"``, a Domain's ``nouns[0]``)."""
    why = (f"the model is unsure of every masked {noun} and sees little dependence between them" if unsure else
           f"the model is nearly sure of the {plural(noun)}, so what dependence is left is weak")
    return (f"Every pair's MI here is below {WEAK_MI:g} nats (the largest is {largest:.2g}): {why}. Percentile "
            "colours spread even these values over the whole scale; linear colours show how small they are.")


def advice(params: set[str]) -> str:
    """What would unmask fewer dependent cells together, in the words of a strategy with parameters ``params``."""
    keep_apart = "MI-guided decoding (mi), which keeps cells that depend on each other out of one pass"
    if {"gamma", "lam"} <= params:
        return "Try a smaller budget (gamma) or a larger MI penalty (lam), so fewer dependent cells are unmasked together."
    if "gamma" in params:
        return f"Try a smaller budget (gamma), or {keep_apart}."
    if "k" in params:
        return f"Try a smaller k, or {keep_apart}."
    return f"Try {keep_apart}."


# what each sampler does, in words, beside its registry name on the decoding view's headings
SAMPLER_WORDS = {"eb": "entropy-bounded", "learned": "learned order", "learned_mi": "learned order and MI",
                 "mask_predict": "mask-predict", "mi": "MI-guided", "mi_exact": "MI-guided, exact MI",
                 "random": "random positions", "sequential": "one position a step", "threshold": "confidence threshold",
                 "top_margin": "largest margin first", "top_prob": "most probable first", "topk": "k surest positions"}  # cells or residues


def sampler_heading(name: str, params: dict) -> str:
    """``**mi** (MI-guided) · gamma 0.6 · lam 1``: the registry name a link and the command line use, what it
    does in words, and its settings."""
    words = SAMPLER_WORDS.get(name)
    return f"**{name}**" + (f" ({words})" if words else "") + f" · {params_text(params)}"


def params_text(params: dict) -> str:
    """A strategy's parameters as a reader says them: ``gamma 0.6 · lam 1 · relative`` (a switch that is off is left
    out, a file by its name, an unset one too: ``topk``'s ``steps``); "defaults" when there are none."""
    def say(key, value):
        if value is None:
            return None
        if isinstance(value, bool):
            return key if value else None
        if isinstance(value, float):
            return f"{key} {value:g}"
        return f"{key} {str(value).rsplit('/', 1)[-1]}"
    return " · ".join(part for k, v in params.items() if (part := say(k, v))) or "defaults"


NBSP = "\u00a0"


def frame_line(items: list[tuple[str, str]]) -> str:
    """One Markdown line of a frame's numbers, ``step **3 / 12** · passes **13** · ...``: it wraps instead of
    cutting a number off, as a row of metrics does in a narrow column, and only between items (the spaces within
    an item do not break, so no label is parted from its value)."""
    return " · ".join(f"{label} **{value}**".replace(" ", NBSP) for label, value in items)


def read_frame_line(line: str) -> dict[str, str]:
    """The numbers of a :func:`frame_line` by label (its inverse; tests read the page with it)."""
    out = {}
    for part in line.replace(NBSP, " ").split(" · "):
        label, _, value = part.partition(" **")
        if value.endswith("**"):
            out[label] = value[:-2]
    return out


def learned_caption(mode: str, threshold: float, steps: int, step: int, masked: int, unmasked: int,
                    noun: str = "cell", marker: str = "Outlined", budget: tuple | None = None) -> str:
    """The caption under the order selector's P(unmask) at frame ``step`` (1-based) of ``learned`` (or of
    ``learned_mi``: ``mode="mi"`` with ``budget`` = ``(gamma, lam, relative)``).

    Args:
        mode, threshold, steps: the strategy's parameters (``steps`` is the budget T).
        masked: positions still masked before this step; unmasked: positions unmasked at it.
        noun: one position (``"cell"``, ``"residue"``); marker: how the figure marks the unmasked ones.
    Raises:
        ValueError: an unknown mode.
    """
    many = plural(noun)
    left = max(steps - step + 1, 1)  # steps left, this one included
    floor = f"⌈masked left / steps left, this one included⌉ (here ⌈{masked} / {left}⌉ = {ceil(masked / left)})"
    rules = {
        "threshold": f"the masked {many} with P ≥ {threshold:g} are unmasked, always with the most probable one, "
                     f"and at step T every masked {noun} is (so a decode can end before T)",
        "paced": f"the masked {many} with P ≥ {threshold:g} are unmasked, but never fewer than {floor}, the "
                 "most probable first",
        "sample": f"each masked {noun} is unmasked with probability P (a seeded draw), always with the most "
                  f"probable one, and at step T every masked {noun} is",
        "rank": f"exactly {floor} of the masked {many} are unmasked, the most probable first",
    }
    if budget is not None:
        gamma, lam, relative = budget
        pair = "MI / min(H_i, H_j)" if relative else "MI"
        rules["mi"] = (f"the masked {many} are visited from the most probable, and one is unmasked while its risk "
                       f"−log P plus {lam:g} × the {pair} with those already taken fits what is left of the budget "
                       f"γ = {gamma:g} (the most probable always), and at step T every masked {noun} is")
    if mode not in rules:
        raise ValueError(f"unknown learned mode {mode!r}; choose one of {', '.join(rules)}")
    return (f"Step budget T = {steps}: step {step} of {steps}, T left: {max(steps - step, 0)}. "
            f"Mode {mode}: at each step {rules[mode]}. {marker}: the {unmasked} {noun if unmasked == 1 else many} "
            "unmasked at this step.")


def agreement_reading(spearman: float, overlap: float, k: int, pairs: int | None = None) -> str:
    """The agreement numbers of the exact-versus-estimated page in plain words (``pairs``: how many there are)."""
    if spearman != spearman:  # NaN: too few pairs
        return "Too few masked pairs to compare the two maps."
    if pairs is not None and k >= pairs:  # the top k are all the pairs: the overlap is 100% whatever the order
        return (f"**In plain words:** the estimator ranks the {pairs} pairs in "
                f"{'the same order' if spearman >= 0.9995 else 'almost the same order' if spearman >= 0.9 else 'an order'}"
                f" as the exact probe (Spearman {spearman:.3f}; 1 is the same order, 0 no relation). With {pairs} "
                "pairs in all, the top-k overlap counts every pair, so it says nothing here: Spearman does.")
    how = ("the same order" if spearman >= 0.9995 else "almost the same order" if spearman >= 0.9 else "mostly the same order" if spearman >= 0.7 else
           "a loosely similar order" if spearman >= 0.4 else "an order with little in common")
    hits = round(overlap * k) if overlap == overlap else 0
    order = (f"ranks {{}} in {how} as the exact probe (Spearman {spearman:.3f}; 1 is the same order, 0 no "
             "relation)")
    top = (f"{hits} of the {k} pairs the exact probe finds strongest are also among the estimator's {k} strongest: "
           "those are the pairs an MI-guided decoder keeps apart")
    if k and hits < k / 2:  # the few strong pairs are what decoding uses: the weaker agreement comes first
        return (f"**In plain words:** only {top}. Over all the pairs, the estimator {order.format('them')}"
                + (", so the two agree more on the order of the many weak pairs than on which few are strongest."
                   if spearman >= 0.7 else "."))
    return f"**In plain words:** the estimator {order.format('the pairs')}. {top[0].upper()}{top[1:]}."


WHATIF_MI_ROW = r"""
**The MI row.** Each blank is coloured by $I(X_i \to X_j)$, the entropy of $j$ that clamping $i$ removes *on
average* over all its digits, weighted by how likely each is. The grids above show one digit's effect; this
map shows what knowing the cell is worth before anyone picks a digit.
"""


def groups(count: int) -> str:
    """``1 connected group``, ``3 connected groups``."""
    return f"{count} connected group" if count == 1 else f"{count} connected groups"


def nats(value: float, floor: float = 0.001) -> str:
    """A headline number in plain decimals, as a class reads it: ``0.0758``, ``1.12``, ``0``, and ``< 0.001``
    for what is smaller (``7.58e-02`` read as a code on a projector); ``floor``: where "smaller" starts
    (:func:`nats_floor` of a map whose MI is all weak), e.g. ``0.000412`` above a floor of 0.00001."""
    value = float(value)
    if value == 0:
        return "0"
    if abs(value) < floor:
        return f"< {np.format_float_positional(floor, trim='-')}"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="-")


def nats_floor(mi) -> float:
    """The :func:`nats` floor for the numbers of a map whose strongest pair is ``max(mi)``: 0.001, or below a map
    of weak MI the power of ten under 1% of its strongest pair (a protein MDM's pairs are all near 0.002 nats: its
    estimator's error, 0.0004, and the probe's asymmetry read "< 0.001", as if nothing)."""
    top = float(np.max(mi)) if np.size(mi) else 0.0
    return 0.001 if top <= 0 else min(0.001, 10.0 ** np.floor(np.log10(0.01 * top)))


def passes(count: int) -> str:
    """``1 pass``, ``12 passes``."""
    return f"{count} pass" if count == 1 else f"{count} passes"


def decodes_note(attempt: int, attempts: int, rejected: int) -> str:
    """Which decode of at most ``attempts`` a result shows and why, for a trace decoded again (``attempt > 1``)."""
    view = "another symmetric view (bands, rows and columns permuted, maybe transposed, digits relabelled)"
    if rejected >= attempt:
        return f"All {attempts} decodes broke a rule; this is the last, read in {view} and shown mapped back."
    earlier = "decode 1" if attempt == 2 else f"decodes 1-{attempt - 1}"
    return (f"Decode {attempt} of at most {attempts}: {earlier} broke a rule; this one read the grid in {view}, "
            "shown mapped back.")


ITERATIONS = ("A recurrent model applies one block again and again, and its output can be read after every "
              "iteration: the grid shows the marginals and entropies after this one (the heatmap and graph stay at "
              "the last).")


def settles(settle, iterations: int) -> str:
    """One line on when the blank cells settle; ``settle``: each blank cell's settling iteration."""
    if len(settle) == 0:
        return "No blank cells: nothing settles."
    values = sorted(int(s) for s in settle)
    median = (values[(len(values) - 1) // 2] + values[len(values) // 2]) / 2
    late = sum(1 for s in values if s == iterations) if iterations > 1 else 0
    verb = "changes" if late == 1 else "change"
    return (f"The median blank cell settles at iteration {median:g} of {iterations}; {late} cell"
            f"{'' if late == 1 else 's'} still {verb} at the last iteration.")
