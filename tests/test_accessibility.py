"""What a user with low vision, colour-blindness or a screen reader, and a class reading a projector, meets: the
decoding grid's texts in the theme's colour and large enough at 1024 px, wrong digits marked by more than red, the
grid described in words, readable contrasts, a keyboard focus ring, and the MI pairs as a table."""

import re
import tomllib
from pathlib import Path
from typing import NamedTuple

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale, sample_colorscale

from mi_lens_app import cdr_marks, charts, exports, figures, frame, graph, grid_svg, protein_figures, strips
from tests import test_app_pages
from tests.test_app_pages import assert_clean, run_page

weights = test_app_pages.weights
env = test_app_pages.env

# the decoding frame's column at 1024 x 768 with the sidebar open, measured in Chromium: the 504-px frame (400-px
# grid, colour bar) is drawn 329 px wide
COLUMN_1024 = 329
PROJECTOR_MIN_PX = 14


def luminance(color: str) -> float:
    """WCAG relative luminance of ``#rrggbb`` or ``rgb(r, g, b)``."""
    if color.startswith("#"):
        rgb = [int(color[k:k + 2], 16) for k in (1, 3, 5)]
    else:
        rgb = [float(v) for v in re.findall(r"[\d.]+", color)[:3]]
    lin = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in (c / 255 for c in rgb)]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def mix(color: str, under: str, share: float) -> str:
    """``color`` at ``share`` over ``under`` (both ``#rrggbb``), as a browser blends them."""
    a, b = ([int(c[k:k + 2], 16) for k in (1, 3, 5)] for c in (color, under))
    return "#" + "".join(f"{round(share * x + (1 - share) * y):02x}" for x, y in zip(a, b))


class Theme(NamedTuple):
    page: str
    sidebar: str
    text: str
    primary: str


# Streamlit 1.67's own themes (the app's config sets none), read in Chromium: the page, the sidebar, the text and
# the primary colour; a selected segment or pill is filled with the primary at 10 % over the page
STREAMLIT_THEMES = {"light": Theme("#ffffff", "#f8f8f7", "#2f2d2b", "#c53948"),
                    "dark": Theme("#171614", "#21201d", "#edebe8", "#cf4250")}
SELECTED_TINT = 0.1


def decoding_frame(**kw) -> str:
    """A 9x9 decoding frame as the decoding page draws it: the first row given, two wrong digits, one cell
    unmasked at this step."""
    digits = np.tile(np.arange(1, 10), 9)
    digits[40:] = 0
    givens = np.zeros(81, bool)
    givens[:9] = True
    errors = np.zeros(81, bool)
    errors[[20, 30]] = True
    chosen = np.zeros(81, bool)
    chosen[30] = True
    args = dict(layer=np.linspace(0, 2.2, 81), layer_name="H before (nats)", zmin=0, zmax=2.2, errors=errors,
                outline=chosen, title="eb: step 3")
    return grid_svg.grid_svg(digits, givens, 3, **{**args, **kw})


def test_grid_texts_outside_the_cells_take_the_theme_text_colour():
    """The title, colour-bar ticks and bar title were fixed #444: 1.9:1 on the dark theme's background."""
    svg = decoding_frame()
    assert "#444" not in svg
    assert re.search(r'<svg [^>]*fill="currentColor"', svg)
    ticks = re.findall(r'<path d="M[^"]*h4" stroke="([^"]+)"', svg)
    assert ticks and set(ticks) == {"currentColor"}


def test_grid_texts_stay_readable_on_a_1024_px_projector():
    """Every text of a 9x9 frame (digits, title, ticks, bar title) is at least 14 px once the frame shrinks into
    its column at 1024 px (digits were 13.7 px, ticks 11.1)."""
    svg = decoding_frame()
    width = int(re.search(r'<svg [^>]*width="(\d+)"', svg).group(1))
    scale = COLUMN_1024 / width
    sizes = [float(v) for v in re.findall(r'font-size="([\d.]+)"', svg)]
    assert sizes and min(sizes) * scale >= PROJECTOR_MIN_PX, (min(sizes), scale)


def test_wrong_digits_are_marked_by_more_than_their_colour():
    """With protanopia a bold red digit looked like a bold black given: each wrong digit is also underlined."""
    svg = decoding_frame()
    wrong = re.findall(r'<text class="wrong" x="([\d.]+)" y="([\d.]+)"', svg)
    marks = re.findall(r'<path class="wrong-mark" d="M([\d.]+) ([\d.]+)h([\d.]+)"', svg)
    assert len(wrong) == len(marks) == 2
    for (tx, ty), (mx, my, length) in zip(wrong, marks):  # a bar under its own digit
        assert float(mx) < float(tx) < float(mx) + float(length) and 0 < float(my) - float(ty) < 400 / 9 / 2


def test_a_digit_the_model_just_filled_is_readable_on_its_cells_colour():
    """A cell unmasked at this step keeps the colour of its entropy before the step: its blue digit was 1.2 to 2.6:1
    on the upper half of the Oranges (a 4x4's first cells, a random or top-k decode's unsure cells). On a coloured
    cell it has a white halo, as a wrong digit has, so the blue reads against white."""
    svg = decoding_frame()
    rects = [(float(x), float(y), float(w), fill) for x, y, w, fill in
             re.findall(r'<rect x="([\d.]+)" y="([\d.]+)" width="([\d.]+)" height="[\d.]+" fill="([^"]+)"', svg)
             if not fill.startswith("url(")]  # the colour bar's gradient
    filled = re.findall(r'<text class="filled" x="([\d.]+)" y="([\d.]+)"([^>]*)>', svg)
    assert len(rects) == 81 and len(filled) == 29  # 40 digits, 9 given, 2 wrong
    dark = 0
    for tx, ty, attrs in filled:
        fill = next(f for x, y, w, f in rects if x <= float(tx) < x + w and y <= float(ty) < y + w)
        if contrast(figures.FILLED_COLOR, fill) >= 4.5:
            continue
        dark += 1
        halo = re.search(r'stroke="([^"]+)" stroke-width="([\d.]+)" paint-order="stroke"', attrs)
        assert halo and contrast(figures.FILLED_COLOR, halo[1]) >= 4.5 and float(halo[2]) >= 3, (fill, attrs)
    assert dark > 10  # the frame's fills run over the whole scale


def test_the_outline_of_the_unmasked_cells_has_a_dark_rim():
    """Orange alone was 2.5:1 on white and 1.1-2 on the orange cells; a dark rim borders it on both sides."""
    svg = decoding_frame()
    chosen = re.findall(r'<rect class="chosen" (x="[^"]+" y="[^"]+")[^>]*stroke-width="(\d+)"', svg)
    rims = re.findall(r'<rect class="chosen-edge" (x="[^"]+" y="[^"]+")[^>]*stroke="([^"]+)" stroke-width="(\d+)"', svg)
    assert len(chosen) == len(rims) == 1
    assert rims[0][0] == chosen[0][0] and int(rims[0][2]) > int(chosen[0][1])
    assert contrast(rims[0][1], "#ffffff") >= 3
    # the rim or the orange stands out from every fill of the lower 80% of the entropy scale (chosen cells are the
    # ones the sampler was sure of)
    fills = sample_colorscale(get_colorscale("Oranges"), np.linspace(0, 0.8, 17).tolist())
    assert min(max(contrast(rims[0][1], f), contrast(figures.CHOSEN_COLOR, f)) for f in fills) >= 3


def test_a_screen_reader_hears_the_grid_in_words():
    """The SVG is one image named by its title; its description says what the picture shows."""
    svg = decoding_frame()
    assert re.search(r'<svg [^>]*role="img" aria-label="eb: step 3"', svg)
    desc = re.search(r"<desc>([^<]*)</desc>", svg).group(1)
    assert "9 given, 31 filled, 41 blank" in desc
    assert "2 wrong: r3c3, r4c4" in desc and "unmasked at this step: r4c4" in desc
    assert "row 1: 1 2 3 4 5 6 7 8 9" in desc and "row 9: . . . . . . . . ." in desc


def test_the_exported_player_underlines_wrong_digits():
    css = re.search(r"\.wrong \{([^}]*)\}", exports.PLAYER_TEMPLATE).group(1)
    assert "underline" in css


def test_the_dependency_graph_given_digits_are_readable():
    """Grey given digits (18 px) were #888, 3.5:1 on white."""
    fig = figures.dependency_figure([(10, 11, 0.5, True)], np.tile(np.arange(1, 10), 9), np.arange(81) % 2 == 0, 3,
                                    [f"c{i}" for i in range(81)])
    texts = [t for t in fig.data if isinstance(t, go.Scatter) and t.mode == "text"]
    assert texts and all(contrast(t.textfont.color, "#ffffff") >= 4.5 for t in texts)


def test_pair_rows_list_the_graph_strongest_first():
    mi = np.zeros((4, 4))
    mi[0, 1] = mi[1, 0] = 0.3
    mi[2, 3] = mi[3, 2] = 0.7
    rules = np.eye(4, dtype=bool) | (np.arange(4)[:, None] // 2 == np.arange(4)[None] // 2)
    g = graph.dependency_graph(mi, np.ones(4, bool), rules, top_k=5)
    rows = graph.pair_rows(graph.edge_list(g), ["a", "b", "c", "d"])
    assert rows == {"pair": ["c · d", "a · b"], "MI (nats)": [0.7, 0.3], "same row, column or box": ["yes", "yes"]}
    assert "same row, column or box" not in graph.pair_rows([(0, 1, 0.3, None)], ["a", "b"])


def test_keyboard_focus_has_a_ring_and_captions_their_contrast():
    """Streamlit's focus ring was 2.2:1 (a link or radio only turned grey, 1.1:1); captions, a button's keyboard
    shortcut (the Decoding page's Space and arrows) and the menu's "Made with Streamlit" at opacity 0.6 were 3.9:1 on
    white."""
    css = frame.LAYOUT_CSS
    rule = re.search(r"([^{}]*:focus-visible[^{}]*)\{([^}]*)\}", css)
    assert rule and "label:has(input:focus-visible)" in rule.group(1)
    ringed = re.search(r":is\(([^)]*)\):focus-visible", rule.group(1))  # ("a" in the selector text: any "label")
    assert ringed and {"a", "button", "summary"} <= {s.strip() for s in ringed.group(1).split(",")}
    assert re.search(r"outline:\s*2px solid currentColor", rule.group(2))
    faded = re.search(r'([^{}]*stCaptionContainer"\][^{}]*)\{\s*opacity:\s*([\d.]+)', css)
    selectors = {s.strip() for s in faded.group(1).split(",")}
    assert {'[data-testid^="stBaseButton"] kbd',
            '[data-testid="stMainMenuPopover"] span:has(+ .stMenuVersionCopyButton)'} <= selectors
    opacity = float(faded.group(2))
    for bg in ("#ffffff", "#f5f5f2"):  # the light theme's white, and a hovered button
        assert contrast(mix(STREAMLIT_THEMES["light"].text, bg, opacity), bg) >= 4.5


def test_a_selected_segment_and_a_slider_value_are_readable_on_both_themes():
    """A selected segment's or pill's label (the MI maps' heatmap colours) and a slider's value were in the theme's
    primary: on the dark theme 3.6:1 on the segment's tint, 3.9 on the page and 3.5 in the sidebar; on the light
    theme 4.48 on the tint. They take a tenth of black on the light theme and a quarter of white on the dark one."""
    rule = re.search(r"([^{}]*stSliderThumbValue[^{}]*)\{([^}]*)\}", frame.LAYOUT_CSS)
    assert rule and 'stButtonGroup"] button:is([aria-checked="true"], [aria-pressed="true"])' in rule.group(1)
    shares = re.search(r"color:\s*light-dark\(color-mix\(in srgb, currentColor (\d+)%, (black|white)\),\s*"
                       r"color-mix\(in srgb, currentColor (\d+)%, (black|white)\)\)", rule.group(2))
    assert shares, rule.group(2)
    for theme, share, other in (("light", *shares.group(1, 2)), ("dark", *shares.group(3, 4))):
        colours = STREAMLIT_THEMES[theme]
        label = mix(colours.primary, {"black": "#000000", "white": "#ffffff"}[other], int(share) / 100)
        for bg in (colours.page, colours.sidebar):
            for under in (bg, mix(colours.primary, bg, SELECTED_TINT)):
                assert contrast(label, under) >= 4.5, (theme, label, under, contrast(label, under))


def test_the_config_leaves_the_theme_to_streamlit():
    """A [theme.light] section (a darker light primary) made Streamlit drop theme.base: a server started with
    --theme.base dark opened light; the labels above are mended in LAYOUT_CSS instead."""
    config = tomllib.loads((Path(__file__).resolve().parent.parent / ".streamlit" / "config.toml").read_text())
    assert "theme" not in config


def test_the_mi_map_pairs_are_a_table_too(env):
    """A chart reads to a screen reader as its tick labels: the graph's pairs are also a table, strongest first."""
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    table = next(e for e in at.expander if e.label.startswith("The ") and "pairs as a table" in e.label)
    df = table.table[0].value
    assert list(df.columns) == ["pair", "MI (nats)", "same row, column or box"]
    count = int(re.search(r"The (\d+) pairs", table.label).group(1))
    drawn = next(int(re.search(r"(\d+) edges", t).group(1)) for t in test_app_pages.specs(at) if "Dependency graph" in t)
    assert len(df) == count == drawn >= 30  # the graph's pairs: its default 30 strongest, and any tied with the 30th
    assert list(df["MI (nats)"]) == sorted(df["MI (nats)"], reverse=True)


def test_the_copy_link_button_takes_the_theme_colours():
    """The sidebar's own HTML button was white with the browser's button text, which the dark theme makes white:
    a blank button (1:1)."""
    style = re.search(r'<button class="mi-copy-link"[^>]*style="([^"]*)"', frame.COPY_LINK).group(1)
    declared = dict(d.split(":", 1) for d in style.replace("\n", "").split(";") if d.strip())
    assert declared.get("color") == "inherit"
    assert declared.get("background") in ("transparent", "inherit")


def test_cdr_names_are_readable_on_a_projector():
    """The band names (H1, H2, H3) were 12 px, in the band colours: CDR1's orange 2.8:1 on white, CDR2's green
    3.4:1."""
    labels = ["E1", "V2·H1", "Q3·H1", "L4", "W5·H2", "G6·H3"]
    fig = protein_figures.sequence_heatmap(np.random.default_rng(0).random((6, 6)), labels)
    names = [a for a in fig.layout.annotations if str(a.name).startswith("CDR-")]
    assert {a.text for a in names} == {"H1", "H2", "H3"}
    for a in names:
        assert a.font.size >= PROJECTOR_MIN_PX and contrast(a.font.color, "#ffffff") >= 4.5, (a.text, a.font.color)
    assert cdr_marks.color("H1", 0.85) == "rgba(230,128,58,0.85)"  # the bands keep their colours


def test_masked_residues_are_readable():
    """A still-masked residue's ``_`` was #888888 in the decoding strip (3.5:1) and #9a9a9a in the arc graph
    (2.8:1)."""
    strip = strips.decode_strip(np.array([[0, 1, 0], [2, 1, 0]]), np.array([[0, 0, 0], [1, 0, 0]], bool),
                                         np.ones((2, 3)), np.zeros((2, 3), bool), "ACDEFGHIKLMNPQRSTVWY")
    masked = [t for t in strip.data if t.name == "masked"]
    assert masked and contrast(masked[0].textfont.color, "#ffffff") >= 4.5
    arcs = protein_figures.arc_figure("A_C", ["A1", "X2", "C3"], np.array([False, True, False]), np.zeros((3, 3)))
    colours = {c for t in arcs.data if t.mode and "text" in t.mode for c in np.atleast_1d(t.textfont.color)}
    assert colours and all(contrast(c, "#ffffff") >= 4.5 for c in colours if c != figures.SELECTED_COLOR)


def test_the_20_amino_acid_marginal_lies_down_with_14_px_letters():
    """What-if's marginal of a residue stood its 20 letters upright at 11 px in a third of the page; at 14 px they
    touched at 1280 px. They now lie down, one 14-px letter per row; the nine digits of a Sudoku cell stand."""
    letters = list("ACDEFGHIKLMNPQRSTVWY")
    fig = charts.bar_figure(letters, {"p": np.full(20, 0.05)}, yaxis="probability")
    assert fig.data[0].orientation == "h" and list(fig.data[0].y) == letters
    assert fig.layout.yaxis.tickfont.size >= PROJECTOR_MIN_PX and fig.layout.yaxis.dtick == 1
    assert fig.layout.height >= 20 * 18 + 60 and fig.layout.xaxis.title.text == "probability"
    digits = charts.bar_figure([str(v) for v in range(1, 10)], {"p": np.full(9, 1 / 9)}, yaxis="probability")
    assert digits.data[0].orientation != "h" and digits.layout.xaxis.tickfont.size >= PROJECTOR_MIN_PX


def test_frontier_series_differ_in_shape_not_colour_alone():
    """Eight samplers as circles told apart by colour only: with deuteranopia top_prob, mi and learned_mi were one
    colour."""
    rows = [{"sampler": s, "label": s, "mean_passes": 1.0 + i, "accuracy": 0.5} for i, s in enumerate(
        ["random", "top_prob", "top_margin", "learned", "learned_mi", "eb", "mi", "sequential"] + [f"s{k}" for k in range(20)])]
    points = [t for t in charts.frontier_figure(rows).data if t.mode == "markers"]
    assert len(points) == 28 and len({t.marker.symbol for t in points}) == 28


def test_the_selected_cell_has_a_dark_rim_on_every_colour_scale():
    """The pink selection alone fell to 1.1:1 on Viridis's green (the MI maps' percentile scale); each pink outline
    now lies over a black one two pixels wider, drawn first."""
    mi = np.random.default_rng(0).random((81, 81))
    figs = [figures.grid_figure(np.zeros(81, int), np.zeros(81, bool), 3, layer=mi[0], selected=10),
            figures.mi_heatmap(mi, 3, [f"c{k}" for k in range(81)], selected=10),
            protein_figures.sequence_heatmap(mi[:30, :30], [f"A{k}" for k in range(30)], selected=4),
            strips.profile_figure([f"A{k}" for k in range(30)], {"dH": mi[0, :30]}, selected=4)]
    for fig in figs:
        shapes = [s.to_plotly_json() for s in fig.layout.shapes]
        pink = [k for k, s in enumerate(shapes) if s["line"]["color"] == figures.SELECTED_COLOR]
        assert pink
        for k in pink:
            box = {key: shapes[k][key] for key in ("x0", "x1", "y0", "y1")}
            under = [r for r in shapes[:k] if r["line"]["color"] == figures.SELECTED_RIM
                     and {key: r[key] for key in box} == box]
            assert under and under[0]["line"]["width"] == shapes[k]["line"]["width"] + 2
    fills = [c for scale in ("Viridis", "Blues", "Oranges") for c in
             sample_colorscale(get_colorscale(scale), np.linspace(0, 1, 21).tolist())]
    assert min(max(contrast(figures.SELECTED_COLOR, f), contrast(figures.SELECTED_RIM, f)) for f in fills) >= 2.8


def test_the_colour_bar_ticks_fit_inside_the_frame():
    """The bar's end ticks are centred on its ends: the lowest "0" was cut at the frame's bottom edge, and without
    a title the highest at its top."""
    for kw in ({}, {"title": "", "show_title": False}):
        svg = decoding_frame(**kw)
        height = float(re.search(r'<svg [^>]*height="([\d.]+)"', svg).group(1))
        ticks = [float(y) for y in re.findall(rf'<text x="[\d.]+" y="([\d.]+)" dominant-baseline="central" '
                                              rf'font-size="{grid_svg.TICK_SIZE}">', svg)]
        assert ticks and min(ticks) - grid_svg.TICK_SIZE / 2 >= 0 and max(ticks) + grid_svg.TICK_SIZE / 2 <= height


def test_pencil_marks_are_readable_on_every_fill_of_every_scale():
    """A solid pencil mark was blue, or white on the scale's far 40 %: blue on the Oranges' middle was 2.1:1 and
    white at the switch 2.8:1. It is black or white by the fill's luminance: at least 4.5:1 on every fill."""
    layer = np.linspace(0, 2.2, 81)
    solid = np.ones((81, 9))
    for scale in ("Oranges", "Blues", "Reds", "Purples", "Viridis", "Cividis", "RdBu_r"):
        zmid = 1.1 if scale == "RdBu_r" else None
        fig = figures.grid_figure(np.zeros(81, int), np.zeros(81, bool), 3, layer=layer, zmin=0, zmax=2.2, zmid=zmid,
                                  colorscale=scale, candidates=solid)
        marks = next(t for t in fig.data if t.name == "candidates").textfont.color
        fills = sample_colorscale(get_colorscale(scale), (layer / 2.2).tolist())
        worst = min(contrast(mark.replace("rgba", "rgb"), fill) for mark, fill in zip(marks[::9], fills))
        assert worst >= 4.5, (scale, worst)


def test_a_sequence_strips_letters_are_readable_on_every_fill():
    """The strip's letters on a light fill were #111111, not black: 4.1:1 on the Viridis and Oranges fills just
    light enough to take them (white on the darker ones is 4.6:1). Black is at least 4.5:1 on every fill."""
    steps, length = 61, 20
    tokens = np.tile(np.arange(1, length + 1), (steps, 1))
    chosen = np.zeros((steps, length), bool)
    chosen[np.arange(1, steps), np.arange(steps - 1) % length] = True
    entropy = np.tile(np.linspace(0.01, np.log(20), steps)[:, None], (1, length))
    for color in ("step", "entropy"):
        fig = strips.decode_strip(tokens, chosen, entropy, np.zeros((steps, length), bool),
                                           "ACDEFGHIKLMNPQRSTVWY", color=color, max_rows=steps)
        heat = fig.data[0]
        z = np.asarray(heat.z, float)
        fills = sample_colorscale(get_colorscale({"step": "Viridis", "entropy": "Oranges"}[color]),
                                  np.nan_to_num(np.clip((z - heat.zmin) / (heat.zmax - heat.zmin), 0, 1)).ravel().tolist())
        fills = np.array(fills, object).reshape(z.shape)
        worst = min(contrast(layer.textfont.color, fills[i, j])
                    for layer in fig.data if str(layer.name).startswith("filled, on")
                    for i, j in zip(*np.nonzero(np.asarray(layer.text, object) != "")))
        assert worst >= 4.5, (color, worst)
