"""A plugin domain's ``rules`` on the Decoding page: a typed state with masked positions has no solution, so
a filled position whose value a rule partner also holds is marked wrong (docs/architecture.md, ``rules``)."""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import pytest
from toy_domain import TOY

from mi_core.domain import Domain


@dataclass(frozen=True)
class RuledToy(Domain):
    def rules(self, length: int) -> np.ndarray:
        return ~np.eye(length, dtype=bool)  # all six letters differ


RULED = RuledToy(**{f.name: getattr(TOY, f.name) for f in fields(TOY)} | {"examples": (("two given", "ab____"),)})


@pytest.fixture
def ruled():
    from mi_core.domain import register, unregister

    register(RULED)
    yield RULED
    unregister(RULED.key)


def decode(domain, text: str, name: str, params: dict):
    from mi_lens_app.sequences import Masking, state_puzzle
    from mi_lens_app.traces import decode_trace

    pz = state_puzzle(domain, text, Masking(), "typed", 64)
    model, _ = domain.model_loader(None, "cpu")
    return pz, decode_trace(model, None, domain, pz.text, pz.solution_text, name, params)


def test_a_typed_state_marks_the_positions_that_break_a_rule(ruled):
    """topk k=4 at temperature 0 on the exact model writes one letter into all four blanks of ``ab____`` at once:
    each breaks the rule with the other three, and the trace is not solved."""
    pz, trace = decode(ruled, "ab____", "topk", {"k": 4})
    last = trace.steps[-1]
    assert len(set(last.tokens[2:].tolist())) == 1  # the clash this test needs
    assert last.errors.tolist() == [False, False, True, True, True, True]
    assert not trace.solved and trace.first_wrong() == (1, 2)


def test_a_decode_that_keeps_the_rules_marks_nothing(ruled):
    _, trace = decode(ruled, "ab____", "sequential", {})
    assert not trace.steps[-1].errors.any() and trace.solved


def test_a_known_original_is_still_what_a_position_is_scored_against(ruled):
    """Where the original value is known (masked by the app, not typed as a blank) a position is wrong when it
    differs from it, whatever the rules say."""
    from mi_lens_app.sequences import Masking, state_puzzle
    from mi_lens_app.traces import decode_trace

    pz = state_puzzle(ruled, "abcdef", Masking("positions", positions="3-6"), "masked", 64)
    model, _ = ruled.model_loader(None, "cpu")
    trace = decode_trace(model, None, ruled, pz.text, pz.solution_text, "sequential", {})
    last = trace.steps[-1]
    assert sorted(last.tokens.tolist()) == [1, 2, 3, 4, 5, 6]
    assert last.errors.tolist() == [int(t) != n for t, n in zip(last.tokens, pz.solution)]


def test_the_decoding_legend_says_a_red_bar_marks_a_broken_rule(ruled):
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page("pages/3_Decoding.py")
    at.run()
    switch = at.radio(key="domain")
    switch.set_value(next(o for o in switch.options if "toy" in str(o).lower())).run()
    assert not at.exception, [e.value for e in at.exception]
    said = [m.value for m in (*at.markdown, *at.caption) if "red bar" in m.value]
    assert any("differs from the original state or breaks a rule ·" in t for t in said), said  # the legend
    assert any("given before masking) or breaks a rule of the domain" in t for t in said), said  # the page's note


def test_what_if_warns_when_a_clamp_breaks_a_rule(ruled):
    """As on a grid, clamping a blank to a value a rule partner already holds is said to break a rule."""
    from pathlib import Path

    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app.py"), default_timeout=120)
    at.switch_page("pages/4_What_if.py")
    at.run()
    switch = at.radio(key="domain")
    switch.set_value(next(o for o in switch.options if "toy" in str(o).lower())).run()
    at.selectbox(key="aa").set_value("a").run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("a already stands in a1: this clamp breaks a rule" in w.value for w in at.warning), \
        [w.value for w in at.warning]
    at.selectbox(key="aa").set_value("f").run()  # a value no partner holds: no warning
    assert not any("breaks a rule" in w.value for w in at.warning)
