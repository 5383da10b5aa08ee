"""The decoding page as a class watches it: numbers never cut off, a legend, presentation mode, a readable
protein strip and an animated export."""

import json
import re

import numpy as np

from mi_core.domains.protein import AMINO_ACIDS
from mi_lens_app import exports, strips
from mi_lens_app.domains import load_presets
from tests import test_app_pages
from tests.test_app_pages import EASY_PRESET, assert_clean, frame_digits, frame_grid, frame_numbers, frames, run_page

weights = test_app_pages.weights
env = test_app_pages.env


def svg_size(svg: str) -> tuple[int, int]:
    """The ``(width, height)`` in px of a frame's SVG."""
    w, h = re.search(r'<svg [^>]*width="(\d+)" height="(\d+)"', svg).groups()
    return int(w), int(h)


def test_frame_numbers_are_one_wrapping_line_not_truncated_metrics(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb", step="3")
    assert_clean(at)
    assert not at.metric  # st.metric cuts long values ("13 …") in a narrow column
    numbers = frame_numbers(at)
    assert [n["step"] for n in numbers] == ["3 / 12", "3 / 45"]
    assert set(numbers[0]) == {"step", "passes", "unmasked", "MI among", "errors"}


def test_the_line_of_numbers_names_the_first_wrong_digit_and_the_result(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb")
    assert_clean(at)
    firsts = []
    for step in range(13):  # topk k=4 fills the 45 blanks in 12 steps
        at.slider(key="step").set_value(step).run()
        numbers = frame_numbers(at)[0]
        if "first wrong digit" in numbers:
            firsts.append((step, numbers["first wrong digit"]))
        assert ("result" in numbers) == (step == 12)
    assert len(firsts) == 1 and re.fullmatch(r":red\[r\dc\d = \d\]", firsts[0][1])  # the random model errs once first
    assert numbers["result"] == ":red[not solved]"


def test_the_advice_after_a_failure_names_the_strategys_own_settings():
    from mi_lens_app import support, texts

    assert "(lam)" in texts.advice(support.strategy_param_names("mi"))
    assert "(gamma)" in texts.advice(support.strategy_param_names("eb"))
    assert "lam" not in texts.advice(support.strategy_param_names("eb"))  # it said "a larger MI penalty (lam)"
    assert "smaller k" in texts.advice(support.strategy_param_names("topk"))


def test_a_strategys_parameters_read_as_words_not_as_code():
    from mi_lens_app import texts

    assert texts.params_text({"gamma": 0.6, "lam": 1.0, "relative": False}) == "gamma 0.6 · lam 1"
    assert texts.params_text({"gamma": 1.0, "lam": 0.25, "relative": True}) == "gamma 1 · lam 0.25 · relative"
    assert texts.params_text({"selector": "assets/sudoku_order_selector.safetensors", "steps": 15}) == (
        "selector sudoku_order_selector.safetensors · steps 15")
    assert texts.params_text({}) == "defaults"
    assert texts.sampler_heading("mi", {"gamma": 0.6}) == "**mi** (MI-guided) · gamma 0.6"
    from mi_core.decoding import STRATEGIES
    assert set(texts.SAMPLER_WORDS) == set(STRATEGIES)  # every sampler a teacher can pick is said in words


def test_the_legend_names_every_colour(env):
    at = run_page("pages/3_Decoding.py")
    legend = next(m.value for m in at.markdown if "outline" in m.value)
    for words in ("**Black** digits were given", ":blue[**blue**]", ":red[**red, underlined**]", ":orange[**orange outline**]"):
        assert words in legend


def test_presentation_mode_draws_large_grids_and_folds_the_settings(env):
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb")
    normal = svg_size(frame_grid(at, "topk"))[1]
    assert not at.get("popover")
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb", present="true")
    assert_clean(at)
    svg = frame_grid(at, "topk")
    assert svg_size(svg)[1] > normal
    sizes = [int(v) for v in re.findall(r'<text class="given"[^>]*font-size="(\d+)"', svg)]
    assert sizes and min(sizes) >= 28
    assert "H before" not in svg  # no colour bar: the grid takes the width, the legend explains the colours
    assert "mi-grid-title" not in svg  # the line of numbers above names the strategy and step, in larger type
    assert at.get("popover")  # the strategies fold into a button; the grids come first
    assert any("<style>" in h.proto.body for h in at.get("html"))  # large fonts


def test_one_strategy_per_row_stacks_the_grids(env):
    at = run_page("pages/3_Decoding.py", a="topk", b="eb", stack="true")
    assert_clean(at)
    assert at.toggle(key="stack").value
    assert len(frame_numbers(at)) == 2


def test_the_protein_strip_shows_letters_from_step_0():
    tokens = np.array([[0, 5, 0, 7]])
    fig = strips.decode_strip(tokens, np.zeros((1, 4), bool), np.zeros((1, 4)), np.zeros((1, 4), bool),
                                       AMINO_ACIDS, size=60)
    text = {t.name: t for t in fig.data if t.name in ("letters", "masked")}
    # each text heatmap writes its own letters only (plotly writes text on NaN cells too: a later layer's letters
    # covered an earlier one's); the coloured heatmap itself is blank at step 0
    assert [list(row) for row in text["letters"].text] == [["", AMINO_ACIDS[4], "", AMINO_ACIDS[6]]]
    assert [list(row) for row in text["masked"].text] == [["_", "", "_", ""]]
    assert np.isnan(text["letters"].z[0]).tolist() == [True, False, True, False]
    assert np.isnan(text["masked"].z[0]).tolist() == [False, True, False, True]
    # letters sized to the window: plotly's own fit to one tall row overlapped them at 120 residues
    sizes = {t.textfont.size for t in fig.data if t.type == "heatmap"}
    assert sizes == {16}  # 4 residues: the largest size
    for width in (60, 120, 200):
        wide = strips.decode_strip(np.zeros((1, width), int), np.zeros((1, width), bool),
                                            np.zeros((1, width)), np.zeros((1, width), bool), AMINO_ACIDS, size=width)
        size = wide.data[0].textfont.size
        assert 7 <= size and (size * 0.6 * width <= 700 or size == 7), (width, size)  # no overlap in ~650-700 px
    assert fig.layout.height >= 170


def test_the_animated_export_is_a_self_contained_player(env):
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb")
    assert "Animation (HTML player)" in [b.label for b in at.download_button]
    from mi_lens_app import core, traces
    from mi_lens_app.domains import DOMAINS, load_presets
    domain = DOMAINS["sudoku4"]
    puzzle = load_presets()["sudoku4"][0].puzzle
    trace = traces.decode_trace(core.load_domain_model(domain, core.app_device())[0], None, domain, puzzle, None,
                              "sequential", {})
    html = exports.decoding_player_html([trace], puzzle, [c != "." for c in puzzle], domain.alphabet, 2)
    data = json.loads(re.search(r"const DATA = (.*);\n", html).group(1))
    assert len(data["runs"][0]["frames"]) == len(trace.steps) and data["n"] == 4
    assert data["runs"][0]["frames"][-1]["state"].count(".") == 0
    assert "<script src" not in html and "http" not in html.split("<script>")[1]  # nothing to fetch
    assert 'e.code === "Space"' in html
    # a phone lays out a page without this tag 980 px wide and shrinks it: the text came out at about 7 px
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in html


def player_text(html: str) -> str:
    """What the exported player writes: its legend, and the word its line of numbers counts the marked ones by."""
    legend = re.sub(r"<[^>]+>", "", re.search(r'<p class="legend">(.*?)</p>', html, re.S).group(1))
    data = json.loads(re.search(r"const DATA = (.*);\n", html).group(1))
    assert "${DATA.marked} <b>${frame.errors.length}</b>" in html
    return " ".join(legend.split()) + " | " + data["marked"]


def test_the_exported_player_of_a_sequence_says_differs_from_native_not_wrong():
    """The page says a residue that differs from the native sequence is no error (many sequences fold alike) and
    counts "native recovered"; the player a class was sent counted the same residues as "wrong 6"."""
    from types import SimpleNamespace
    step = SimpleNamespace(step=0, tokens=np.array([1, 0, 3]), passes=0, extra_passes=0,
                           chosen=np.zeros(3, bool), errors=np.array([True, False, False]))
    trace = SimpleNamespace(strategy="mi", steps=[step])
    sequence = player_text(exports.decoding_player_html([trace], "A_C", [False, False, True], tuple(AMINO_ACIDS)))
    assert "wrong" not in sequence and "differs from the native sequence" in sequence and "not an error" in sequence
    assert sequence.endswith("| differs from native")  # the count in the line of numbers
    original = player_text(exports.decoding_player_html([trace], "A_C", [False, False, True], tuple(AMINO_ACIDS),
                                                        native="original"))
    assert "native" not in original and "differs from the original sequence" in original
    words = player_text(exports.decoding_player_html([trace], "(_]", [False, False, True], ("(", ")", "[", "]"),
                                                     native="original"))  # brackets: no protein folds
    assert "differs from the original sequence" in words and "fold" not in words
    grid = player_text(exports.decoding_player_html([trace], "1.3.", [True, False, True, False], ("1", "2", "3", "4"), 2))
    assert "wrong (differs from the solution)" in grid and grid.endswith("| wrong")


def test_strategies_are_described_in_plain_words_with_the_technical_form_apart(env):
    at = run_page("pages/3_Decoding.py", a="mi", b="learned")
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Fills several cells per pass, but only cells the model is sure of") for c in captions)
    inside = [c.value for e in at.expander if e.label == "Technical description" for c in e.caption]
    assert any("lam * sum of MI(i, j) over those already accepted" in c for c in inside)
    outside = [c for c in captions if c not in inside]
    for developer_text in ("mi_fn", "prepare", "``net``", "max_batch"):
        assert not any(developer_text in c for c in outside), developer_text


def test_a_rare_residue_gets_advice_an_app_user_can_follow(env):
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="paste", seq="MKTAYIAKQRQISFVKSHFSRQUEERLGLIEVQ")
    assert_clean(at)
    message = " ".join(e.value for e in at.error)
    assert "write X or _ in their place" in message and "ambiguous=" not in message


def test_a_step_back_and_forth_reuses_the_frames_it_drew(env, monkeypatch):
    """A decoding step redraws two grids: each frame is built once (figure_cache.figure), as SVG (a plotly grid took
    the browser 100-150 ms to draw), so stepping costs little more than sending them."""
    from mi_lens_app import figure_cache, grid_svg

    figure_cache._figure.clear()
    built = []
    real = grid_svg.grid_svg
    monkeypatch.setattr(grid_svg, "grid_svg", lambda *a, **k: built.append(k.get("title")) or real(*a, **k))
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb", step="3")
    assert_clean(at)
    first = list(built)
    assert {"topk: step 3", "eb: step 3"} <= set(first)
    assert not at.button(key="step_prev").disabled  # the buttons know the link's frame on its first run
    at.button(key="step_next").click().run()
    assert [n["step"] for n in frame_numbers(at)] == ["4 / 12", "4 / 45"]  # on from the link's frame, not from 0
    at.button(key="step_prev").click().run()
    assert_clean(at)
    assert built.count("topk: step 3") == first.count("topk: step 3")  # step 3 was not built again
    assert "topk: step 4" in built
    assert not at.get("plotly_chart")  # the frames are SVG


def test_a_frame_shows_digits_colours_outlines_and_hover(env):
    """The SVG frame draws what the legend names: given digits black and bold, filled blue, the cells unmasked
    at this step outlined in orange, the entropy before the step as the cells' orange scale with its colour bar,
    and each cell's numbers as its tooltip."""
    from mi_lens_app.figures import CHOSEN_COLOR, ERROR_COLOR, FILLED_COLOR, GIVEN_COLOR

    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="4", b="eb", step="1")
    assert_clean(at)
    assert set(frames(at)) == {"topk: step 1", "eb: step 1"}
    svg = frame_grid(at, "topk")
    digits = frame_digits(at, "topk")
    givens = load_presets()["sudoku9"][0].puzzle
    assert [d for kind, d in digits if kind == "given"] == [c for c in givens if c != "."]
    assert len([d for kind, d in digits if kind != "given"]) == 4  # topk k=4: four cells filled at step 1
    assert re.search(f'<text class="given"[^>]*fill="{GIVEN_COLOR}"[^>]*font-weight="bold"', svg)
    fills = dict(re.findall(r'<text class="(filled|wrong)"[^>]*fill="([^"]+)"', svg))
    assert fills and set(fills.items()) <= {("filled", FILLED_COLOR), ("wrong", ERROR_COLOR)}
    assert len(re.findall(f'<rect class="chosen"[^>]*stroke="{CHOSEN_COLOR}"', svg)) == 4
    assert len(re.findall(r"<rect [^>]*><title>", svg)) == 81  # every cell has its tooltip
    assert "H = " in svg and "given " in svg  # the entropy of a blank, the digit of a given
    assert "H before" in svg and "url(#" in svg  # the colour bar
    assert re.search(r'fill="rgb\(\d+, ?\d+, ?\d+\)"', svg)  # cells coloured by their entropy
    legend = next(m.value for m in at.markdown if "outline" in m.value)
    assert ":orange[**orange outline**]" in legend and ":violet[**dotted purple**]" in legend


def test_the_strip_marks_a_filled_letter_above_it_and_presenting_draws_larger_letters():
    tokens, chosen = np.array([[0, 5, 0, 7], [3, 5, 0, 7]]), np.array([[False] * 4, [True, False, False, False]])
    args = (tokens, chosen, np.zeros((2, 4)), np.zeros((2, 4), bool), AMINO_ACIDS)
    fig = strips.decode_strip(*args, size=60)
    mark = next(t for t in fig.data if t.name == "unmasked at this step")
    # a bar over the cell, clear of its letter (an 11-px box on the letter made "(" read as "[(")
    assert mark.marker.symbol == "line-ew" and list(mark.y) == [1 - 0.36]
    wide = strips.decode_strip(*args, size=60, wide=True)
    assert wide.data[0].textfont.size > fig.data[0].textfont.size


def test_presenting_a_protein_keeps_both_strips_and_no_step_table(env):
    at = run_page("pages/3_Decoding.py", domain="protein", a="topk", a_topk_k="8", b="eb", step="2")
    assert_clean(at)
    assert len(at.dataframe) == 2  # each strategy's residues of this step, below its strip
    at = run_page("pages/3_Decoding.py", domain="protein", a="topk", a_topk_k="8", b="eb", step="2", present="true")
    assert_clean(at)
    assert len(at.dataframe) == 0  # presenting: the two strips stay on a projector's screen


def test_presenting_a_protein_to_its_end_leaves_the_result_to_the_line_of_numbers(env):
    at = run_page("pages/3_Decoding.py", domain="protein", a="topk", a_topk_k="8", b="eb", step="99")
    assert any(i.value.startswith("Filled in") for i in at.info)
    at = run_page("pages/3_Decoding.py", domain="protein", a="topk", a_topk_k="8", b="eb", step="99", present="true")
    assert not any(i.value.startswith("Filled in") for i in at.info)  # it pushed the second strip off a 768-px screen


def test_the_strip_counts_its_steps_as_the_line_of_numbers_does():
    steps = 6  # the start and five steps
    tokens = np.zeros((steps, 4), int)
    fig = strips.decode_strip(tokens, np.zeros((steps, 4), bool), np.zeros((steps, 4)),
                                       np.zeros((steps, 4), bool), AMINO_ACIDS, max_rows=4)
    assert fig.layout.title.text == "Steps 2-5 of 5"  # the line of numbers says "step 5 / 5"; it said "last 4 of 6"


def test_presenting_the_strategies_fold_their_descriptions_so_the_settings_fit_a_768_px_popup(env):
    at = run_page("pages/3_Decoding.py", a="mi", b="eb")
    labels = [e.label for e in at.expander]
    assert labels.count("Technical description") == 2 and "What it does" not in labels
    at = run_page("pages/3_Decoding.py", a="mi", b="eb", present="true")
    assert_clean(at)
    labels = [e.label for e in at.expander]
    assert labels.count("What it does") == 2 and "Technical description" not in labels


def test_a_decode_that_has_ended_is_not_outlined_while_the_other_plays_on(env):
    """The finished grid kept its last step's orange outlines while the other decode went on stepping."""
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="20", b="sequential")
    last = int(frame_numbers(at)[0]["step"].split(" / ")[1])  # topk's last step
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="20", b="sequential", step=str(last))
    assert 'class="chosen"' in frame_grid(at, "topk")
    at = run_page("pages/3_Decoding.py", a="topk", a_topk_k="20", b="sequential", step=str(last + 1))
    assert 'class="chosen"' not in frame_grid(at, "topk") and 'class="chosen"' in frame_grid(at, "sequential")


def test_every_seed_box_says_its_range(env):
    """Streamlit's number box cuts a typed 2.5 to 2 and keeps 1e99 at its top without a word: the help says so."""
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET)
    assert "0 to 1,000,000,000" in at.number_input(key="dseed").help
    at = run_page("pages/1_MI_maps.py", src="generate")
    assert "0 to 1,000,000,000" in at.number_input(key="seed").help
    at = run_page("pages/1_MI_maps.py", domain="protein", mask_mode="rate")
    assert "0 to 1,000,000,000" in at.number_input(key="mask_seed").help


def test_the_step_table_of_mask_predict_gives_the_digits_it_wrote_and_masked_again(env):
    at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="mask_predict", a_mask_predict_steps="3", b="eb",
                  step="1")
    assert_clean(at)
    table = at.dataframe[0].value
    assert len(table) == 45 and table["masked again"].sum() == 30  # 45 blanks: all written, 30 masked again
    assert (table["digit"] > 0).all()  # the written digit, not the mask's 0


PHONE = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Mobile Safari/537.36"


def test_on_a_phone_each_line_of_numbers_sits_above_its_own_grid(env):
    """A phone stacks columns: a row of both headers above a row of both grids read header A, header B, grid A,
    grid B, and the second strategy's passes and errors sat a screen above its grid. On a phone each strategy's
    frame is one block (its line of numbers, then its grid); a larger screen keeps the headers in a row, level."""
    from mi_lens_app import screen

    order = {}
    for agent in (PHONE, None):
        env.setattr(screen, "browser_agent", lambda agent=agent: agent)
        at = run_page("pages/3_Decoding.py", preset=EASY_PRESET, a="topk", a_topk_k="4", b="eb", step="3")
        assert_clean(at)
        order[agent] = ["grid" if "mi-grid" in m.value else "numbers" for m in at.markdown
                        if "mi-grid" in m.value or m.value.startswith("step\u00a0**")]
    assert order[PHONE] == ["numbers", "grid", "numbers", "grid"]
    assert order[None] == ["numbers", "numbers", "grid", "grid"]
