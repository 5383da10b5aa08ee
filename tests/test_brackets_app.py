"""The app on a sequence domain that is not a protein: the example plugin ``examples/brackets`` (Dyck-2 words
over ( ) [ ]). Its states are typed, chosen or uploaded in its own alphabet and every page speaks of its
positions and brackets, not of residues and amino acids."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pandas  # noqa: F401  (whole before a page's thread imports it)
import pytest

from mi_lens_app import sequences, texts

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
             *at.subheader]
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
    at.text_area(key="seq").set_value("()[]()[]").run()  # nothing masked
    assert any("no position is masked" in e.value for e in at.error)
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
    assert states == [("line 2", "(__)[__]"), ("line 4", "_(()[])[]_")]
    with pytest.raises(ValueError, match=r"w.txt line 2: 'x' at position 2"):
        sequences.read_states_upload("w.txt", b"()()()()\n(x______\n", brackets)
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
    assert all(re.fullmatch(r"The domain's own check: (right|wrong) \(well nested [01], givens kept 1\)\.", v)
               for v in verdicts), verdicts


def test_the_own_check_scores_a_word_right_or_wrong(brackets):
    from mi_lens_app import support
    from mi_lens_app.domains import Puzzle

    pz = Puzzle("brackets", tuple(brackets.parse_state("(__)[__]")), None)
    right, scores = support.own_check(brackets, pz, brackets.parse_state("(())[[]]"), 2)
    assert right and scores == "well nested 1, givens kept 1"
    right, scores = support.own_check(brackets, pz, brackets.parse_state("(([)[]]]"), 2)
    assert not right and "well nested 0" in scores
    from mi_core.domain import get_domain

    assert support.own_check(get_domain("protein"), pz, [], 1) is None  # compared with its native sequence instead
