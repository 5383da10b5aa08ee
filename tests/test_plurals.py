"""A domain's nouns made plural by ``Domain.plurals`` where an added s will not do: a plugin whose positions are
vertices (a graph colouring) was told of "vertexs" by the command line and on every page. The test domain here is
the toy of ``tests/toy_domain.py`` with its positions called vertices and its values colours."""

from __future__ import annotations

import dataclasses
import json
import pickle
import re
from pathlib import Path

import pandas  # noqa: F401  (whole before a page's thread imports it)
import pytest
from toy_domain import TOY

from mi_core import cli
from mi_core.options import counted, plural

ROOT = Path(__file__).resolve().parents[1]
VERTEXS = re.compile(r"vertexs|vertexes|Vertexs", re.IGNORECASE)


@pytest.fixture
def vertices():
    from mi_core.domain import register, unregister

    domain = dataclasses.replace(TOY, key="vertex6", label="Vertex colours 6 (test)", short="vertex6",
                                 names=("vertex6",), nouns=("vertex", "colour"), plurals=("vertices", None))
    register(domain)
    yield domain
    unregister(domain.key)


def test_each_noun_carries_its_plural(vertices):
    from mi_core.domain import get_domain

    assert vertices.nouns == ("vertex", "colour")  # still the plain words, where a page compares or shows them
    assert [plural(n) for n in vertices.nouns] == ["vertices", "colours"]
    assert [plural(n) for n in get_domain("protein").nouns] == ["residues", "amino acids"]  # an added s by default
    assert counted(1, vertices.nouns[0], "masked") == "1 masked vertex"
    assert counted(3, vertices.nouns[0], "masked") == "3 masked vertices"
    assert plural(pickle.loads(pickle.dumps(vertices)).nouns[0]) == "vertices"  # a worker process's copy
    assert plural(dataclasses.replace(vertices, key="v2").nouns[0]) == "vertices"
    assert pickle.loads(pickle.dumps(vertices)).plurals == ("vertices", None)


def test_a_new_noun_does_not_take_the_old_ones_plural(vertices):
    """dataclasses.replace passes the old plurals on: a new noun got the old noun's ("2 masked vertices" for nodes)."""
    nodes = dataclasses.replace(vertices, key="n2", nouns=("node", "colour"))
    assert [plural(n) for n in nodes.nouns] == ["nodes", "colours"] and nodes.plurals == (None, None)
    mice = dataclasses.replace(vertices, key="m2", nouns=("mouse", "colour"), plurals=("mice", None))
    assert [plural(n) for n in mice.nouns] == ["mice", "colours"]
    assert plural(dataclasses.replace(mice, key="m3", nouns=("mouse", "hue")).nouns[0]) == "mice"  # the same noun


@pytest.mark.parametrize("plurals, message", [
    ("vertices", r"plurals must be \(plural of 'vertex', plural of 'colour'\)"),
    (("vertices",), r"plurals must be \(plural of 'vertex', plural of 'colour'\)"),
    (("vertices", ""), r"each a word or None \(the noun \+ s\), got \('vertices', ''\)"),
    (("vertices", 3), r"got \('vertices', 3\)"),
])
def test_bad_plurals_are_named(plurals, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(TOY, key="bad", nouns=("vertex", "colour"), plurals=plurals)


def test_probe_and_generate_say_vertices(vertices, capsys):
    assert cli.main(["probe", "vertex6", "--state", "ab____", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "probed 4 masked vertices" in out and "between vertices" in out and not VERTEXS.search(out)
    assert cli.main(["generate", "vertex6", "--template", "abcdef", "--mask-positions", "9"]) == 2
    err = capsys.readouterr().err
    assert "'9' is outside 1-6 (the sequence has 6 vertices)" in err and not VERTEXS.search(err)


def test_a_state_of_the_wrong_length_is_told_in_the_domains_nouns(vertices, capsys):
    """The length check of every typed state counts the domain's own positions, not "positions"."""
    assert cli.main(["probe", "vertex6", "--state", "ab__", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "state has 6 vertices, got 4" in err and not VERTEXS.search(err)


def _page(path: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page(path)
    at.run()
    at.radio(key="domain").set_value("vertex6").run()
    return at


def _words(at) -> str:
    parts = [*at.markdown, *at.caption, *at.info, *at.warning, *at.error, *at.selectbox, *at.slider, *at.radio,
             *at.header, *at.subheader, *at.text_input, *at.text_area]
    return " ".join(f"{getattr(e, 'value', '')} {getattr(e, 'label', '')} {getattr(e, 'help', '')}" for e in parts)


def test_the_mi_maps_page_says_vertices(vertices):
    at = _page("pages/1_MI_maps.py")
    at.radio(key="psrc").set_value("paste").run()
    at.text_area(key="seq").set_value("ab____").run()
    assert not at.exception, [e.value for e in at.exception]
    assert "6 vertices, 4 masked." in [c.value for c in at.sidebar.caption]
    assert not VERTEXS.search(_words(at))
    at.radio(key="mask_mode").set_value("positions").run()
    assert "which vertices the model is asked to fill" in at.radio(key="mask_mode").help
    at.text_input(key="mask").set_value("40-45").run()
    assert any("'40-45' is outside 1-6 (the sequence has 6 vertices)" in e.value for e in at.error)
    assert not VERTEXS.search(_words(at))


def test_the_benchmarks_page_speaks_of_the_domains_states(vertices, tmp_path, monkeypatch):
    """A plugin's sweep was labelled in Sudoku's words: "puzzles solved", "accuracy (whole grid right)"."""
    from streamlit.testing.v1 import AppTest

    row = {"sampler": "sequential", "params": {}, "n": 4, "accuracy": 0.5, "cell_accuracy": 0.75,
           "mean_passes": 3.0, "command": "python -m mi_core sweep vertex6 --puzzles s.txt --json sweep_s.json"}
    (tmp_path / "sweep_s.json").write_text(json.dumps([row]))
    monkeypatch.setenv("MI_LENS_BENCHMARKS", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.switch_page("pages/5_Benchmarks.py")
    at.query_params["domain"] = "vertex6"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    words = _words(at)
    assert "puzzle" not in words and "whole grid" not in words, words
    assert "a set of Vertex colours 6 (test) states" in words and "the domain's own check accepts it" in words
    table = at.dataframe[0].value
    assert "vertex6 states right (%)" in table.columns and "vertex accuracy (%)" in table.columns
