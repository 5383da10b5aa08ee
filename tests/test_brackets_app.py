"""The app on a sequence domain that is not a protein: the example plugin ``examples/brackets`` (Dyck-2 words
over ( ) [ ]). Its states are typed, chosen or uploaded in its own alphabet and every page speaks of its
positions and brackets, not of residues and amino acids."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pandas  # noqa: F401  (whole before a page's thread imports it)
import pytest

from mi_core.decoding.budgets import derived_budgets
from mi_lens_app import sequences, texts, widgets  # imported before the plugin registers, as in a full run

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["pages/1_MI_maps.py", "pages/2_Exact_vs_estimated.py", "pages/3_Decoding.py", "pages/4_What_if.py"]
# protein wording ("Protein" alone is the protein domain's name, which a page may list among the domains)
PROTEIN_WORDS = re.compile(r"[Rr]esidue|[Aa]mino|\bprotein|Proteins|CATH|FASTA")


@pytest.fixture
def brackets():
    from mi_core.domain import DOMAINS, register, unregister

    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import brackets as plugin  # registers itself on its first import
    finally:
        sys.path.remove(str(ROOT / "examples"))
    if plugin.BRACKETS.key not in DOMAINS:
        register(plugin.BRACKETS)
    yield plugin.BRACKETS
    unregister(plugin.BRACKETS.key)


def _page(path: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page(path)
    at.run()
    at.radio(key="domain").set_value("brackets").run()
    return at


def _words(at) -> str:
    parts = [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.selectbox, *at.slider, *at.radio,
             *at.header, *at.subheader]
    return " ".join(f"{getattr(e, 'value', '')} {getattr(e, 'label', '')} {getattr(e, 'help', '')}" for e in parts)


@pytest.mark.parametrize("path", PAGES)
def test_a_bracket_word_typed_in_the_sidebar_opens_each_page_in_the_domains_words(brackets, path):
    at = _page(path)
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("_(__)____[]_").run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "12 positions, 8 masked." in [c.value for c in at.sidebar.caption]
    assert not PROTEIN_WORDS.findall(_words(at))


def test_a_letter_outside_the_alphabet_gets_the_domains_own_message(brackets):
    at = _page(PAGES[0])
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("ACDE_______F").run()  # protein letters: once read as a protein, then a crash
    assert not at.exception, [e.value for e in at.exception]
    assert any("'A' at position 1 is not a Dyck-2 brackets value" in e.value for e in at.error)
    at.text_area(key="seq").set_value("()[]()[]").run()  # nothing masked: a prompt in the main area, no error
    assert not at.error, [e.value for e in at.error]
    assert any(i.value.startswith("No position is masked: mark some with _") for i in at.main.info)
    at.radio(key="mask_mode").set_value("positions").run()
    at.text_input(key="mask").set_value("40-45").run()
    assert any("'40-45' is outside 1-8 (the sequence has 8 positions)" in e.value for e in at.error)
    assert not PROTEIN_WORDS.findall(" ".join(e.value for e in at.error))


def test_the_domains_examples_are_its_presets(brackets):
    at = _page(PAGES[0])
    at.radio(key="psrc").set_value("preset").run()
    assert at.selectbox(key="ppreset").options == [name for name, _ in brackets.examples]
    assert not at.exception and not at.error


def test_an_uploaded_file_of_states_is_read_in_the_domains_alphabet(brackets):
    states = sequences.read_states_upload("w.txt", b"# words\n(__)[__]\n\n_(()[])[]_\n", brackets)
    assert states == ([("line 2", "(__)[__]"), ("line 4", "_(()[])[]_")], [])
    states, skipped = sequences.read_states_upload("w.txt", b"()()()()\n(x______\n))__((__\n", brackets)
    assert states == [("line 1", "()()()()")] and len(skipped) == 2
    assert skipped[0].startswith("w.txt line 2: 'x' at position 2") and "no well-nested word" in skipped[1]
    with pytest.raises(ValueError, match=r"w.txt line 1: 'x' at position 2"):
        sequences.read_states_upload("w.txt", b"(x______\n", brackets)
    with pytest.raises(ValueError, match="no state in the file"):
        sequences.read_states_upload("w.txt", b"# nothing\n", brackets)


def test_texts_take_the_domains_nouns(brackets):
    from mi_core.domain import get_domain

    protein, grid = get_domain("protein"), get_domain("sudoku")
    assert "co-evolving contacts do. The" in texts.worded(texts.SEQUENCE_MAPS_PAGE, protein)
    worded = texts.worded(texts.SEQUENCE_MAPS_PAGE, brackets)
    assert "folded" not in worded and "⟦" not in worded and not PROTEIN_WORDS.findall(worded)
    assert "every bracket" in worded and "masked positions carry MI" in worded
    assert texts.worded("Fills the surest cells; Digit by digit.", brackets) == (
        "Fills the surest positions; Bracket by bracket.")
    assert texts.worded("Fills the surest cells.", protein) == "Fills the surest residues."
    assert texts.worded("Fills the surest cells.", grid) == "Fills the surest cells."


def test_a_decoded_word_is_judged_by_the_domains_own_check(brackets):
    at = _page(PAGES[2])
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("(__)[__]").run()
    at.button(key="step_last").click().run()
    assert not at.exception, [e.value for e in at.exception]
    verdicts = [e.value for e in [*at.success, *at.error] if "own check" in e.value]
    assert len(verdicts) == 2  # one for each of the two samplers compared
    assert all(re.fullmatch(r"The domain's own check: (right|wrong) \(well nested: (yes|no), givens kept: yes\)\.", v)
               for v in verdicts), verdicts


def test_the_own_check_scores_a_word_right_or_wrong(brackets):
    from mi_lens_app import support
    from mi_lens_app.domains import Puzzle

    pz = Puzzle("brackets", tuple(brackets.parse_state("(__)[__]")), None)
    right, scores = support.own_check(brackets, pz, brackets.parse_state("(())[[]]"), 2)
    assert right and scores == "well nested: yes, givens kept: yes"
    right, scores = support.own_check(brackets, pz, brackets.parse_state("(([)[]]]"), 2)
    assert not right and "well nested: no" in scores
    from mi_core.domain import get_domain

    assert support.own_check(get_domain("protein"), pz, [], 1) is None  # compared with its native sequence instead


def test_one_masked_position_says_there_is_no_pair_and_no_nan(brackets):
    at = _page(PAGES[0])
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("()[]()(_").run()
    assert any("Only one position is masked" in c.value for c in at.caption)
    at = _page(PAGES[1])
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("()[]()(_").run()
    at.toggle(key="exact").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    values = {m.label: m.value for m in at.metric}
    assert values["Spearman"] == "n/a" and "nan" not in " ".join(map(str, values.values())).lower()


def test_the_top_k_overlap_counts_only_pairs_there_are():
    from mi_lens_app.core import compare_maps

    rng = np.random.default_rng(0)
    mi = rng.random((8, 8))
    mi = mi + mi.T
    masked = np.zeros(8, bool)
    masked[[1, 2, 5, 6]] = True  # 6 pairs
    stats = compare_maps(mi, mi, masked, k=20)
    assert stats["k"] == 6 and stats["topk_overlap"] == 1.0


def test_the_strip_writes_each_letter_once_and_the_arcs_count_from_one():
    from mi_lens_app import protein_figures, strips

    tokens = np.array([[1, 0, 0, 2], [1, 3, 0, 2], [1, 3, 4, 2]])
    chosen = np.array([[0, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0]], bool)
    fig = strips.decode_strip(tokens, chosen, np.ones((3, 4)), np.zeros((3, 4)), "()[]", noun="position")
    layers = {t.name: np.asarray(t.text) for t in fig.data if t.name in ("letters", "masked", "filled, on dark",
                                                                         "filled, on light")}
    written = np.sum([(text != "") for text in layers.values()], axis=0)
    assert (written == 1).all(), written  # one layer writes each cell: a second drew black over white letters
    masked = np.array([0, 1, 1, 0], bool)
    arcs = protein_figures.arc_figure("([])", ["(1", "_2", "_3", ")4"], masked, np.eye(4)[::-1] + 0.1, noun="position")
    letters = next(t for t in arcs.data if t.mode == "text")
    assert list(letters.x) == [1, 2, 3, 4] and arcs.layout.xaxis.title.text == "position"


def test_a_word_no_completion_keeps_is_refused(brackets):
    with pytest.raises(ValueError, match="no well-nested word keeps these brackets"):
        brackets.parse_input("))__((__")
    assert brackets.parse_input("(__)[__]")


def test_the_benchmarks_page_says_it_has_no_sets_for_the_domain(brackets):
    from streamlit.testing.v1 import AppTest

    assert widgets.domain_by_short("brackets") is brackets  # a domain registered after the app's modules loaded

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/5_Benchmarks.py")
    at.query_params["domain"] = "brackets"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "No results for Dyck-2 brackets are among these sets" in captions and "protein set" not in captions


def test_a_params_line_leaves_out_what_is_unset():
    assert texts.params_text({"k": 1, "steps": None}) == "k 1"


def test_the_benchmarks_page_opens_on_the_domains_own_sweep(brackets, tmp_path, monkeypatch):
    """Before: with a brackets sweep among the results the page still said "No results for Dyck-2 brackets are
    among these sets" (a plugin's own sets were never looked for) and opened on a Sudoku set."""
    import json

    from streamlit.testing.v1 import AppTest

    row = {"sampler": "sequential", "params": {}, "n": 4, "accuracy": 0.5, "mean_passes": 3.0, "seconds": 0.1,
           "command": "python -m mi_core sweep brackets --puzzles words.txt --json sweep_words.json"}
    (tmp_path / "sweep_words.json").write_text(json.dumps([row]))
    (tmp_path / "sweep_other.json").write_text(json.dumps([{**row, "command": "python -m mi_core sweep sudoku"}]))
    monkeypatch.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/5_Benchmarks.py")
    at.query_params["domain"] = "brackets"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    captions = " ".join(c.value for c in at.caption)
    assert "Opened on a sweep of the brackets domain" in captions and "No results" not in captions



def test_a_step_count_starts_below_the_words_positions(brackets):
    """mask_predict's 10 steps limit nothing on a word of 8 positions (every position can take a pass of its own):
    it starts at n / 4, the largest of the budgets derived from n (5), with its range kept; switched to from Sudoku,
    where its 10 fits 81 cells and stays, it starts there too."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/3_Decoding.py")
    at.run()
    at.selectbox(key="a").set_value("mask_predict").run()
    assert at.number_input(key="a_mask_predict_steps").value == 10  # Sudoku 9x9: unchanged
    at.radio(key="domain").set_value("brackets").run()
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("_(__)[]_").run()  # 8 positions
    assert not at.exception, [e.value for e in at.exception]
    steps = at.number_input(key="a_mask_predict_steps")
    assert steps.value == max(derived_budgets(8)) == 5 and steps.max >= 10  # the range stays
    at.selectbox(key="b").set_value("mask_predict").run()  # a widget drawn on the word first
    assert at.number_input(key="b_mask_predict_steps").value == 5


@pytest.mark.parametrize("domain, positions", [("sudoku9", 81), ("sudoku4", 16), ("protein", 60), ("antibody", 120)])
def test_the_step_counts_that_fit_keep_their_defaults(domain, positions):
    """Sudoku's tuned learned 15 and the generic learned_mi 20 and mask_predict 10 stay where they are below the
    input's positions; only one at or above them moves (learned_mi's 20 on a 4x4 grid of 16 cells: 5)."""
    from mi_lens_app import support
    from mi_lens_app.domains import DOMAINS

    d = DOMAINS.get(domain)
    if d is None:
        pytest.skip(f"no domain {domain}")
    steps = {name: next(f.default for f in support.strategy_fields(name, d, positions) if f.name == "steps")
             for name in ("learned", "learned_mi", "mask_predict")}
    tuned = dict(((s, k), v) for s, k, v in d.strategy_defaults).get(("learned", "steps"), 10)
    assert steps == {"learned": tuned, "learned_mi": 20 if positions > 20 else 5, "mask_predict": 10}


def test_the_pair_map_is_named_in_the_domains_words(brackets):
    """A word has no contacts (a folded chain's): the MI maps page's chart of pairs far apart is a pair map here,
    its slider and text say so, and an empty map asks for more positions, not residues."""
    import json

    at = _page(PAGES[0])
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("_(__)____[]_").run()
    assert not at.exception, [e.value for e in at.exception]
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Pair map<br>") for t in titles), titles
    assert at.slider(key="sep").label.startswith("Pair map: pairs at least")
    assert not re.search(r"[Cc]ontact", " ".join([*titles, _words(at)]))
    at.text_area(key="seq").set_value("()[]()(_").run()  # one masked position: no pair
    assert any("fewer than two positions are masked" in i.value for i in at.info)
