"""The Decoding page's view of one frame of a decode: the grid or the sequence strip with its header, the step's
table, the result line and the order selector's chart; :func:`player` draws a strategy's frames at the step the
page's slider picks."""

import numpy as np
import pandas as pd
import streamlit as st

from mi_lens_app import (
    figure_cache,
    figures,
    frame,
    grid_svg,
    links,
    protein_figures,
    screen,
    strips,
    support,
    texts,
    widgets,
)

STRIP_ROWS = 16  # steps the protein strip shows at once (the most recent): rows stay tall enough to read
PRESENT_STRIP_ROWS = 4  # presenting: both strategies' strips on a 1024 x 768 screen


GRID_SIDE = {False: 400, True: 500}  # px, the grid itself in normal and presentation mode


# presenting, a digit's height as a share of its cell's: 30 px in a 9x9's 55.6-px cells, 68 in a 4x4's 125 (the 9x9's 30
# there filled a quarter of the cell); outside presentation mode grid_svg's own sizes
PRESENT_DIGIT = 0.54


def recovery(pz, s) -> float:
    """Share of the masked residues filled so far that match the native sequence (NaN: none to compare)."""
    native = np.asarray(pz.solution if pz.solution is not None else pz.digits)
    scored = ~pz.givens & (s.tokens > 0) & (native > 0)
    return float((s.tokens[scored] == native[scored]).mean()) if scored.any() else float("nan")


def native_known(pz) -> bool:
    """Whether the input carries a native (original) value at any masked position, to score recovery against."""
    native = np.asarray(pz.solution if pz.solution is not None else pz.digits)
    return bool((native[~pz.givens] > 0).any())


def recovered_item(domain, pz, rec: float) -> list[tuple[str, str]]:
    """The line's "native recovered" figure, or nothing where no native is known (a typed bracket word)."""
    if not native_known(pz):
        return []
    return [(texts.worded("native recovered", domain), "n/a" if np.isnan(rec) else f"{100 * rec:.0f}%")]


def frame_header(trace, s, last: int, noun: str, *extra: tuple[str, str], present: bool = False,
                 side: str | None = None) -> None:
    """The strategy line and one line of numbers (it wraps, so no number is ever cut off): step, passes (+ the
    exact probe's own passes, for mi_exact), how many were unmasked together, the MI among them, and ``extra``
    (errors and the verdict, or native recovery). Given a ``side`` (a grid's frame), the numbers keep two lines'
    height, so the grid does not jump as the line wraps and unwraps during Play."""
    st.markdown(texts.sampler_heading(trace.strategy, trace.params))
    passes = f"{s.passes}" + (f" + {s.extra_passes}" if s.extra_passes else "")
    if trace.earlier_passes:  # decoded again: what the decodes before this one cost, so no one reads 18 as the cost
        passes += f" ({trace.earlier_passes + s.passes + s.extra_passes} in all)"
    place = st.container(key=f"frame_nums_{side}") if side else st.container()
    place.markdown(texts.frame_line([
        ("step", f"{s.step} / {last}"), ("passes", passes), ("unmasked", f"{int(s.chosen.sum())}"),
        ("MI among", "n/a" if s.mi_among is None else f"{texts.nats(s.mi_among)} nats"), *extra]),
        help=f"passes: forward passes so far (+ the exact probe's own, for mi_exact; in brackets, with the "
             f"passes of the decodes before this one, when the puzzle was decoded again); unmasked: {noun} unmasked "
             f"together at this step; MI among: the sum of pairwise MI over them ({trace.mi_source or 'no MI source'})")


def sequence_frame(domain, pz, trace, step, side, view, present=False):
    """One side of the protein view: metrics, the sequence strip up to this step, the order selector's
    P(unmask) (strategies that run one), the residues unmasked (not when presenting: both strategies' strips
    must stay on a projector's screen)."""
    last = len(trace.steps) - 1
    s = trace.steps[min(step, last)]
    chosen = np.flatnonzero(s.chosen)
    rec = recovery(pz, s)
    frame_header(trace, s, last, texts.plural(domain.nouns[0]), *recovered_item(domain, pz, rec))  # full width: no wrap
    shown = trace.steps[:min(step, last) + 1]
    start, size = view
    lo, hi = protein_figures.window(pz.length, start, size)
    wrap = strips.strip_rows(hi - lo, present)
    rows = [np.stack([getattr(v, name) for v in shown]) for name in ("tokens", "chosen", "entropy", "errors")]
    fig = figure_cache.shared_figure(  # the same frame of the same decode, for every student who watches it
        strips.decode_strip, *rows, "".join(domain.alphabet), noun=domain.nouns[0],
        color=st.session_state.get("color") or "step", start=start, size=size,
        max_rows=PRESENT_STRIP_ROWS if present else STRIP_ROWS,
        title="" if present else f"{trace.strategy}: step {s.step}",
        regions=protein_figures.cdr_spans(pz.labels()), wide=present, touch=screen.on_touch(), wrap=wrap)
    per_row = -(-(hi - lo) // wrap)  # the letters a row, capped to the strip's width
    widgets.letter_chart(fig, f"frame_{side}", per_row, strips.strip_letter_px(per_row, present))
    if support.uses_selector(trace.strategy):
        selector_view(domain, pz, trace, s, side, view)
    if len(chosen) and not present:
        letters = [domain.alphabet[t - 1] for t in s.written[chosen]]  # also those masked again at once
        table = {domain.nouns[0]: [f"{a}{c + 1}" for a, c in zip(letters, chosen)],
                 "entropy (nats)": np.round(s.entropy[chosen], 4),
                 f"p({domain.nouns[1]})": np.round(s.confidence[chosen], 3)}
        if "select_prob" in s.maps:
            table["P(unmask)"] = np.round(s.maps["select_prob"][chosen], 3)
        native = np.asarray(pz.solution if pz.solution is not None else pz.digits)[chosen]
        if native_known(pz):  # the native residue itself, and whether the one written is it (a bare tick box
            word = texts.worded("native", domain)  # headed "native" named neither)
            table[word] = [domain.alphabet[n - 1] if n else "" for n in native]
            table[f"matches {word}"] = pd.array([w == n if n else None for w, n in zip(s.written[chosen], native)],
                                                dtype="boolean")  # blank: unknown
        if s.remasked[chosen].any():  # mask_predict: written, then masked again in the same step
            table["masked again"] = s.remasked[chosen]
        step_table(table, len(chosen), sequence_columns(domain, word if native_known(pz) else None))
    if step >= last:
        if trace.stopped:
            st.warning(f"Stopped after step {last}: {trace.stopped}.")
        else:
            if not present:  # presenting, the line of numbers says it, and the second strip keeps the screen
                # neutral, not green: matching the native sequence is a yardstick, and 0% is no success
                matched = (f"; {100 * rec:.0f}% of the masked {texts.plural(domain.nouns[0])} "
                           + texts.worded("match the native sequence.", domain))
                st.info(f"Filled in {texts.passes(s.passes)}" + ("." if np.isnan(rec) else matched))
            verdict = support.own_check(domain, pz, s.tokens, s.passes)
            if verdict is not None:  # a domain that scores a sequence by its own rules (no reference needed)
                right, scores = verdict
                (st.success if right else st.error)(f"The domain's own check: {'right' if right else 'wrong'} "
                                                    f"({scores}).")


def frame_grid(domain, pz, trace, s, present: bool, finished: bool = False) -> str:
    """The grid of one frame as SVG (``grid_svg``; a step redraws two, and a plotly grid took the browser
    100-150 ms to draw), built once per process (``figure_cache.figure``), keyed by what it draws. Its hover is the
    browser's tooltip on each cell. ``finished``: the other decode plays on past this one's last step, so its
    cells are not outlined as unmasked now."""
    labels = domain.labels()

    def build():
        entropy = np.where(s.entropy > 0, s.entropy, np.nan)
        hover = figures.cell_hover(labels, s.tokens, pz.givens, s.entropy, None)
        return grid_svg.grid_svg(s.tokens, pz.givens, domain.geometry.box, layer=entropy, layer_name="H before (nats)",
                                 colorscale="Oranges", zmin=0, zmax=float(np.log(domain.n_values)), hover=hover,
                                 outline=None if finished else s.chosen, remasked=None if finished else s.remasked,
                                 errors=s.errors, side=GRID_SIDE[present],
                                 digit_size=digit_size(len(s.tokens), present), colorbar=not present,
                                 # presenting, the line of numbers above names them, in larger type
                                 title=f"{trace.strategy}: step {s.step}", show_title=not present)

    arrays = (s.tokens, pz.givens, s.entropy, s.chosen, s.remasked, s.errors)
    key = ("frame", domain.key, trace.strategy, s.step, present, finished,
           *(None if a is None else np.asarray(a).tobytes() for a in arrays))
    return figure_cache.figure(key, build)


def digit_size(cells: int, present: bool) -> int | None:
    """The digits' font size in a frame of ``cells`` cells (None: grid_svg's default for its size)."""
    if not present:
        return None
    n = int(figures.cell_xy(cells)[0].max()) + 1  # cells a row
    return round(PRESENT_DIGIT * GRID_SIDE[True] / n)


# presenting on a 1024 x 768 (or 1280 x 720) projector, both grids fill the screen's height, and learned's P(unmask)
# board below its grid started at y = 737 (689): off the screen. The column is no wider than the grid, so the board
# cannot sit beside it; a switch in the settings' pop-up shows it in the grid's place
SWAP_KEY = "present_select"


def swap_needs(domain, present: bool) -> str:
    """What a link's :data:`SWAP_KEY` needs where its switch is not drawn: presentation mode on, or a strategy
    that runs the order selector."""
    if not present:
        return f"{'use' if links.arrived('present') is not None else 'add'} present=true: it needs presentation mode on"
    names = [name for name in support.strategy_names(domain) if support.uses_selector(name)]
    return ("it needs a strategy that runs the order selector: " + " or ".join(names) if names
            else "no strategy here runs an order selector")


def swapped(trace, s, present: bool) -> bool:
    """Whether this frame shows the selector's P(unmask) board in place of its grid (presenting, switched on, a
    strategy that runs a selector, from step 1 on)."""
    return (present and bool(st.session_state.get(SWAP_KEY)) and support.uses_selector(trace.strategy)
            and s.step > 0 and s.maps.get("select_prob") is not None)


def frame_view(domain, pz, trace, step, side, present=False, head=None):
    """One side's frame: its header (into ``head``, a row shared with the other side's, so the grids below start
    level however the headers wrap), the grid, the selector's view, the cells unmasked and, at the end, the
    outcome."""
    labels = domain.labels()
    last = len(trace.steps) - 1
    s = trace.steps[min(step, last)]
    chosen = np.flatnonzero(s.chosen)
    with head or st.container():
        frame_header(trace, s, last, "cells", ("errors", f"{int(s.errors.sum())}"),
                     *verdict(domain, trace, s, last), present=present, side=side)
    # st.markdown, not st.html: st.html's sanitizer keeps HTML only and drops the SVG. There is no script in it,
    # and grid_svg escapes every text in it (titles, tooltips)
    if swapped(trace, s, present):  # presenting: the selector's board in the grid's place, on the screen
        selector_view(domain, pz, trace, s, side, present=present)
    else:
        st.markdown(frame_grid(domain, pz, trace, s, present, finished=step > last), unsafe_allow_html=True)
        if support.uses_selector(trace.strategy):
            selector_view(domain, pz, trace, s, side, present=present)
    if s.budget_spent is not None:
        st.container(key=f"budget_{side}").caption(f"Budget spent at this step: {texts.nats(s.budget_spent)} nats")
    if len(chosen) and not present:  # presenting: the grids and their legend fill the screen
        table = {"cell": [labels[c] for c in chosen], "digit": s.written[chosen].astype(int),
                 "entropy": np.round(s.entropy[chosen], 4), "p(digit)": np.round(s.confidence[chosen], 3)}
        if "select_prob" in s.maps:
            table["P(unmask)"] = np.round(s.maps["select_prob"][chosen], 3)
        table["wrong"] = s.errors[chosen]
        if s.remasked[chosen].any():  # mask_predict: written, then masked again in the same step
            table["masked again"] = s.remasked[chosen]
        step_table(table, len(chosen))
    if step >= last:
        result(domain, trace, s, last)


# a grid's step table in half a 1024-px page with the sidebar open (328 px inside its border): six columns at
# their own widths took 355 px (learned) and 372 px (mask_predict), the last one a sideways scroll away. Each
# column gets a fixed width and a short header; its tooltip names it in full
STEP_COLUMNS = {"cell": ("cell", 46, "the cell unmasked"), "digit": ("digit", 44, "the digit written"),
                "entropy": ("H", 56, "entropy of the cell before this step (nats)"),
                "p(digit)": ("p", 46, "the model's probability of the digit written"),
                "P(unmask)": ("P(unm.)", 58, "the order selector's probability of unmasking the cell"),
                "wrong": ("wrong", 50, "the digit is not the solution's"),
                "masked again": ("again", 50, "written, then masked again in the same step")}


def sequence_columns(domain, native: str | None) -> dict:
    """STEP_COLUMNS for a sequence's table (its nouns; ``native``: the word for the native sequence, None where it
    is not known): on a 390-px phone its columns took 495 px (learned) and 415 (mi) of 340."""
    noun, value = domain.nouns[0], domain.nouns[1]
    columns = {noun: (noun, 60, f"the {noun} unmasked"), "entropy (nats)": STEP_COLUMNS["entropy"],
               f"p({value})": ("p", 46, f"the model's probability of the {value} written"),
               "P(unmask)": STEP_COLUMNS["P(unmask)"], "masked again": STEP_COLUMNS["masked again"]}
    if native:
        columns[native] = (native, 56, f"the {native} {value}")
        columns[f"matches {native}"] = ("match", 50, f"the {value} written matches the {native} one")
    return columns


def step_table(table: dict, rows: int, columns: dict = STEP_COLUMNS) -> None:
    """The cells unmasked at a step, every column in view in half a 1024-px page (see STEP_COLUMNS)."""
    config = {name: st.column_config.Column(label, width=width, help=text)
              for name, (label, width, text) in columns.items() if name in table}
    st.dataframe(pd.DataFrame(table), hide_index=True, height=min(38 + 35 * rows, 250), column_config=config)


def result(domain, trace, s, last: int) -> None:
    """The decode's outcome under its last frame: stopped, solved or how many cells are wrong, and, for a puzzle
    decoded again, which decode this is and the passes of all of them."""
    total = trace.earlier_passes + s.passes + s.extra_passes
    again = "" if trace.attempt == 1 else " " + texts.decodes_note(trace.attempt, trace.attempts, trace.rejected)
    cost = texts.passes(s.passes) if trace.attempt == 1 else \
        f"{texts.passes(total)} over {trace.attempt} decodes ({s.passes} in the one shown)"
    if trace.stopped:
        st.warning(f"Stopped after step {last}: {trace.stopped}. Parallel unmasking wrote digits that no "
                   "solution agrees with.")
    elif trace.solved:
        st.success(f"Solved in {cost}." + again)
    else:
        wrong = int(s.errors.sum())
        st.error(f"Finished in {cost} with {wrong} wrong cell{'s' if wrong != 1 else ''}."
                 + again + " " + failure_note(domain, trace, s))


def verdict(domain, trace, s, last: int) -> list[tuple[str, str]]:
    """What a class should see in the line of numbers: which decode this is, for a puzzle decoded again (the passes
    are this decode's), the step that wrote the first wrong digit, in red, and at the last step whether the grid
    was solved."""
    items = [("decode", f"{trace.attempt} of at most {trace.attempts}")] if trace.attempt > 1 else []
    first = trace.first_wrong()
    if first is not None and s.step == first[0]:
        items.append(("first wrong digit", f":red[{domain.labels()[first[1]]} = {int(s.tokens[first[1]])}]"))
    if s.step >= last:
        items.append(("result", ":green[solved]" if trace.solved else ":red[not solved]"))
    return items


def failure_note(domain, trace, last) -> str:
    """Where a failed decode went wrong, in plain words: the first step that wrote a wrong digit, which cell,
    and whether a cell of the same row, column or box was written in the same pass (the independent sampling
    MI-guided decoding is meant to avoid); empty when no step wrote one."""
    labels, peers = domain.labels(), domain.rules(len(last.tokens))
    first = trace.first_wrong()
    if first is not None:
        s, c = trace.steps[first[0]], first[1]
        digit = int(s.tokens[c])
        same = [int(j) for j in np.flatnonzero(s.chosen & peers[c]) if j != c]
        clash = [j for j in same if int(s.tokens[j]) == digit]
        text = f"The first wrong digit was written at step {s.step}: {labels[c]} = {digit}"
        if clash:
            text += (f", in the same pass as {', '.join(f'{labels[j]} = {digit}' for j in clash)}, which shares a "
                     "row, column or box with it: both were sampled at once from their own marginals, and nothing "
                     "stopped them from agreeing.")
        elif same:
            text += (f", together with {len(same)} cell{'s' if len(same) > 1 else ''} of its row, column or box "
                     f"({', '.join(labels[j] for j in same[:4])}).")
        else:
            text += "; no cell of its row, column or box was written with it: the model itself was wrong there."
        return text + (" " + texts.advice(support.strategy_param_names(trace.strategy)) if same
                       else " Fewer cells a step would not have helped here.")
    return ""


def param(trace, key: str):
    """The trace's value of its strategy's parameter ``key`` (the default when it was not given)."""
    value = trace.params.get(key)
    return support.param_default(trace.strategy, key) if value is None else value


def selector_view(domain, pz, trace, s, side, view=None, present=False):
    """The order selector's P(unmask) at this step, under the frame of a strategy that runs one: a board over
    the grid, or bars along the sequence (in the window ``view``)."""
    prob = s.maps.get("select_prob")
    noun = domain.nouns[0]
    if s.step == 0 or prob is None:
        st.caption(f"The order selector's P(unmask) of each masked {noun} shows from step 1 on.")
        return
    steps = int(param(trace, "steps"))
    if "mode" not in support.strategy_param_names(trace.strategy):  # learned_mi: the risk in the MI budget
        mode, threshold = "mi", 0.0
        budget = (float(param(trace, "gamma")), float(param(trace, "lam")), bool(param(trace, "relative")))
    else:
        mode, threshold, budget = param(trace, "mode"), float(param(trace, "threshold")), None
    before = trace.steps[s.step - 1].tokens
    title = f"{trace.strategy}: P(unmask) at step {s.step}"
    if domain.layout == "grid":  # SVG, as the frame: it shrinks with its column, numbers and all
        st.markdown(figure_cache.shared_figure(grid_svg.select_prob_svg, prob, before, pz.givens, s.chosen,
                                          domain.geometry.box, domain.labels(), title=title, side=GRID_SIDE[present]),
                    unsafe_allow_html=True)
        marker = "Outlined"
    else:
        start, size = view or (0, pz.length)
        line = mode in ("threshold", "paced")  # the modes that compare P with the threshold
        fig = figure_cache.shared_figure(strips.select_prob_profile, prob, before, s.chosen, pz.labels(),
                                    noun=domain.nouns[0], start=start, size=size,
                                    threshold=threshold if line else None, title=title)
        marker = "Dashed line: the threshold; orange bars" if line else "Orange bars"
        widgets.chart(fig, key=f"select_{side}")
    st.caption(texts.learned_caption(mode, threshold, steps, s.step, int((before == 0).sum()), int(s.chosen.sum()),
                                     noun, marker, budget))


def player(domain, pz, traces, count, view=None, present=False, stacked=False):
    """The frame controls and both frames; reruns on its own while playing, and stops at the last frame."""
    if st.session_state.get("play"):
        step = int(st.session_state.get("step", 0) or 0)
        if step >= count - 1:  # the end: stop the timer (a full rerun draws the page without it)
            st.session_state["play"] = False
            st.rerun()
        st.session_state["step"] = step + 1
    step = widgets.frame_controls(count, compact=present)
    # the sequence strip needs the whole width; a phone stacks columns, and a row of headers above a row of grids put
    # both strategies' numbers above both grids, the second grid's a screen away from it
    one_per_row = stacked or domain.layout == "sequence" or screen.on_phone()
    if one_per_row:
        places, heads = [st.container(), st.container()], [None, None]
    else:  # a row of headers, then a row of grids: they start level however either header wraps
        both = st.container(key=frame.SIDE_BY_SIDE)
        heads, places = both.columns(2), both.columns(2)
    for place, head, side, trace in zip(places, heads, ("a", "b"), traces):
        with place:
            if trace is None:
                continue
            if domain.layout == "sequence":
                sequence_frame(domain, pz, trace, step, side, view, present)
            else:
                frame_view(domain, pz, trace, step, side, present, head)
