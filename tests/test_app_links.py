"""Shared links under AppTest: a crafted link with huge values is clamped with a visible note, parameters a
page cannot take are named in one line, the copy-link button is on every page, and an uploaded puzzle put in
the link lands in the URL."""

import pytest
from streamlit.testing.v1 import AppTest

from mi_lens_app.core import INT_RANGE
from mi_lens_app.domains import load_presets
from tests import test_app_pages
from tests.test_app_pages import EASY, assert_clean, frame_steps, run_page

weights = test_app_pages.weights  # the fixtures: a tiny random MDM and estimator, and the environment naming them
env = test_app_pages.env


def link_notes(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "link" in w.value]


def test_a_seed_in_a_link_is_a_whole_number_in_range_and_the_note_says_which(env):
    """seed=3.7 was "not understood" while the box showed 3; seed=1e99 read "→ 1e+09"."""
    at = run_page("pages/1_MI_maps.py", src="generate", seed="3.7")
    assert_clean(at)
    (note,) = link_notes(at)
    assert "seed=3.7 → 3 (a whole number: the part before the point)" in note and "not understood" not in note
    assert at.number_input(key="seed").value == 3 and at.query_params["seed"] == "3"
    at = run_page("pages/1_MI_maps.py", src="generate", seed="1e99")
    (note,) = link_notes(at)
    assert "seed=1e99 → 1000000000 (the largest allowed)" in note, note


@pytest.mark.parametrize("path, query, said", [
    ("app.py", {"domain": "banana", "scale": "rainbow"},
     "not understood: domain=banana (one of: 9x9, 4x4, protein, antibody), scale=rainbow (one of: linear, log, percentile)."),
    ("pages/6_About.py", {"domain": "banana"}, "not understood: domain=banana (one of: 9x9, 4x4, protein, antibody)."),
    ("pages/5_Benchmarks.py", {"domain": "banana"}, "not understood: domain=banana (one of: 9x9, 4x4, protein, antibody)."),
    ("pages/3_Decoding.py", {"scale": "rainbow"}, "not understood: scale=rainbow (one of: linear, log, percentile)."),
    ("pages/1_MI_maps.py", {"puzzle": "123"}, "not used on this page: puzzle (add src=paste to open it)."),
    ("pages/1_MI_maps.py", {"domain": "protein", "seq": "MKV"}, "not used on this page: seq (add psrc=paste to open it)."),
    ("pages/1_MI_maps.py", {"src": "preset", "puzzle": "123"}, "not used on this page: puzzle (use src=paste to open it)."),
    ("pages/6_About.py", {"puzzle": "123"}, None),  # no puzzle picker there: nothing to open it with
    ("pages/1_MI_maps.py", {"domain": ["4x4", "protein"]}, "link gives domain 2 times: the last, protein, is used."),
    ("pages/1_MI_maps.py", {"src": "paste", "cut": "puzzle"},
     "puzzle was too long for this link and is not in it (cut=puzzle): paste it again."),
])
def test_a_link_is_checked_where_it_opens(env, path, query, said):
    """A page that does not draw a shared parameter's widget took any value of it without a word (the next page
    opened called it not understood); a pasted text without its source, and a key given twice, were silent."""
    at = AppTest.from_file(test_app_pages.APP, default_timeout=120)
    if path != "app.py":
        at.switch_page(path)
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert_clean(at)
    if said is None:
        assert not link_notes(at)
        return
    (note,) = link_notes(at)
    assert note.endswith(said), note


@pytest.mark.parametrize("query, said", [
    ({"scale": ["log", "rainbow"]},  # not "rainbow is used"
     "Part of this link was not understood: scale=rainbow (one of: linear, log, percentile)."),
    ({"zz": ["1", "2"]}, "Part of this link was not understood: zz=2."),
    ({"domain": ["4x4", "4x4"]}, None),  # the same value twice: nothing to choose between
    ({"domain": ["4x4", "protein"]}, "This link gives domain 2 times: the last, protein, is used."),  # no "changed"
    ({"src": "paste", "cut": "puzzle"}, "The puzzle was too long for this link and is not in it (cut=puzzle): paste "
                                        "it again."),
])
def test_a_key_given_twice_or_a_cut_text_is_said_as_it_is(env, query, said):
    at = AppTest.from_file(test_app_pages.APP, default_timeout=120)
    at.switch_page("pages/1_MI_maps.py")
    for key, value in query.items():
        at.query_params[key] = value
    at.run()
    assert_clean(at)
    assert [w.value for w in at.warning] == ([said] if said else [])


def test_a_link_of_many_unknown_keys_names_a_few_and_counts_the_rest(env):
    at = run_page("pages/6_About.py", **{f"zz{i}": "1" for i in range(200)})
    (note,) = link_notes(at)
    assert note.endswith("zz7=1 and 192 more.") and len(note) < 200, note


def test_a_crafted_link_with_huge_values_is_clamped_with_a_note(env):
    at = run_page("pages/3_Decoding.py", a="mask_predict", a_mask_predict_steps="100000000", b="topk",
                  b_topk_k="99999", temp="1e9", step="-3")
    assert_clean(at)
    assert at.number_input(key="a_mask_predict_steps").value == INT_RANGE[1]
    assert at.number_input(key="b_topk_k").value == INT_RANGE[1]
    assert at.number_input(key="temp").value == 5.0
    (note,) = link_notes(at)
    assert "a_mask_predict_steps=100000000 → 1000 (the largest allowed)" in note
    assert "temp=1e9 → 5 (the largest allowed)" in note and "step=-3 → 0 (the smallest allowed)" in note
    assert len(frame_steps(at)) == 2  # both sides decoded, within the bounds
    # the URL says what the page shows: a link copied now reopens the clamped values, not the crafted ones
    assert at.query_params["a_mask_predict_steps"] == str(INT_RANGE[1])
    assert at.query_params["b_topk_k"] == str(INT_RANGE[1]) and at.query_params["temp"] == "5"
    assert at.query_params["step"] == "0"
    at.run()  # the next run binds the widgets to the URL again: they keep the clamped values, and the note goes
    assert at.number_input(key="a_mask_predict_steps").value == INT_RANGE[1]
    assert at.query_params["a_mask_predict_steps"] == str(INT_RANGE[1])
    assert not link_notes(at)


@pytest.mark.parametrize("path, query", [
    ("pages/3_Decoding.py", {"a": "mi_exact", "b": "top_prob"}),
    ("pages/3_Decoding.py", {"a": "learned_mi", "b": "random"}),
    ("pages/1_MI_maps.py", {"src": "generate", "edges": "threshold"}),
])
def test_every_number_bound_to_the_url_has_a_maximum(env, path, query):
    at = run_page(path, **query)
    assert_clean(at)
    assert at.number_input
    for box in at.number_input:
        assert box.proto.has_max and box.max < 2**53, box.key
    assert "a_mi_exact_max_batch" not in [box.key for box in at.number_input]  # a memory knob, not a setting


@pytest.mark.parametrize("path, query, named", [
    ("pages/1_MI_maps.py", {"domain": "banana", "cell": "zz99", "layer": "nope"},
     ["domain=banana", "cell=zz99", "layer=nope"]),
    ("pages/2_Exact_vs_estimated.py", {"exact": "true", "prune": "true", "eps": "abc", "frobnicate": "1"}, ["eps=abc", "frobnicate=1"]),
    ("pages/3_Decoding.py", {"a": "no_such_sampler", "a_mi_gamma": "x"}, ["a=no_such_sampler"]),
])
def test_parameters_a_page_cannot_take_are_named_in_one_line(env, path, query, named):
    at = run_page(path, **query)
    assert_clean(at)
    (note,) = link_notes(at)
    assert note.startswith("Part of this link was not understood: ") and "\n" not in note
    for part in named:
        assert part in note
    if "exact" in query:  # the page's own toggles are understood
        assert "prune" not in note and "exact=" not in note


def test_a_link_to_a_given_cell_says_why_it_was_not_taken(env):
    first = load_presets()["sudoku9"][0].puzzle
    given = next(i for i, ch in enumerate(first) if ch not in ".0")
    cell = f"r{given // 9 + 1}c{given % 9 + 1}"
    at = run_page("pages/4_What_if.py", cell=cell, domain="9x9")
    assert_clean(at)
    (note,) = link_notes(at)
    assert f"cell={cell} (a given cell: pick a blank one)" in note
    at = run_page("pages/4_What_if.py", cell="zz99", domain="9x9")
    assert "cell=zz99." in link_notes(at)[0]  # no reason to give: not a cell at all


def test_a_clean_link_gets_no_note(env):
    first = load_presets()["sudoku9"][0].puzzle
    blank = [i for i, ch in enumerate(first) if ch in ".0"][-1]
    at = run_page("pages/1_MI_maps.py", cell=f"r{blank // 9 + 1}c{blank % 9 + 1}", layer="entropy", boxmajor="true",
                  domain="9x9")
    assert_clean(at)
    assert not link_notes(at)


def test_parameters_of_other_pages_are_named_as_unused(env):
    at = run_page("pages/5_Benchmarks.py", cell="r1c3")
    assert_clean(at)
    assert link_notes(at) == ["Part of this link is not used on this page: cell."]


def test_presentation_mode_in_a_link_to_another_view_is_kept_without_a_note(env):
    # a teacher's present=true link opened on MI maps was noted as unused, and the mode dropped before Decoding
    at = run_page("pages/1_MI_maps.py", present="true")
    assert_clean(at)
    assert not link_notes(at)
    assert at.query_params["present"] == "true"


def test_every_page_has_a_copy_link_button(env):
    at = run_page("pages/4_What_if.py")
    assert any("Copy link to this view" in h.proto.body for h in at.get("html"))


def test_an_uploaded_puzzle_put_in_the_link_is_in_the_url(env):
    at = run_page("pages/1_MI_maps.py", src="upload")
    at.file_uploader(key="upload").set_value(("p.txt", f"{EASY}\n".encode(), "text/plain")).run()
    next(b for b in at.button if b.label == "Put this puzzle in the link").click().run()
    assert_clean(at)
    assert at.query_params["puzzle"] == [EASY] or at.query_params["puzzle"] == EASY
    fresh = run_page("pages/1_MI_maps.py", src="paste", puzzle=EASY)  # what a fresh browser opens
    assert fresh.text_area(key="puzzle").value == EASY and not fresh.error


def test_the_sidebar_names_files_not_server_paths(env, tmp_path):
    bad = tmp_path / "deep" / "inside" / "server" / "broken.safetensors"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not a safetensors file")
    env.setenv("MI_LENS_SUDOKU_MODEL", str(bad))
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    notes = [c.value for c in at.sidebar.caption if "Model" in c.value]
    assert notes and "broken.json" in notes[0] and str(tmp_path) not in notes[0]


def test_models_warm_up_once_per_process_in_the_background(env):
    import threading

    from mi_lens_app import support, warm
    from mi_lens_app.domains import DOMAINS

    env.setenv("MI_LENS_WARM", "1")
    env.setattr(warm, "_warm_started", False)
    assert warm.warm_up() is True
    assert warm.warm_up() is False  # once per process
    warm = next(t for t in threading.enumerate() if t.name == "mi-lens-warm-up")
    warm.join(timeout=120)
    assert not warm.is_alive()
    domain = DOMAINS["sudoku9"]
    assert support.model(domain) is support.model(domain) and support.estimator(domain) is not None


def test_the_launcher_warms_the_caches_the_pages_read_before_any_page_runs(env, monkeypatch):
    import threading

    from mi_lens_app import core, serve, support, warm

    env.setenv("MI_LENS_WARM", "1")
    env.setattr(warm, "_warm_started", False)
    support._model.clear()
    said = []
    monkeypatch.setattr(serve, "_say_warm", said.append)
    serve._warm_when_serving(wait_s=0.0)  # no runtime here: it starts at once
    warm = next(t for t in threading.enumerate() if t.name == "mi-lens-warm-up")
    warm.join(timeout=120)
    assert len(said) == 1 and said[0] >= 0  # the launcher prints its ready line from this

    def no_load(*args):
        raise AssertionError("a page loaded a model the launcher had loaded")

    monkeypatch.setattr(core, "load_domain_model", no_load)
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert at.get("plotly_chart")


def test_uploads_are_refused_by_streamlit_above_the_apps_limits(env):
    import tomllib

    from mi_lens_app.domains import MAX_UPLOAD_BYTES
    from mi_lens_app.sequences import MAX_FASTA_BYTES

    config = tomllib.loads((test_app_pages.ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] * 2**20 == MAX_UPLOAD_BYTES  # 5 MiB: refused before it lands
    at = run_page("pages/1_MI_maps.py", src="upload")
    assert at.file_uploader(key="upload").proto.max_upload_size_mb * 2**20 == MAX_UPLOAD_BYTES
    at = run_page("pages/1_MI_maps.py", domain="protein", psrc="upload")
    assert at.file_uploader(key="pupload").proto.max_upload_size_mb * 2**20 == MAX_FASTA_BYTES


def test_every_widget_bound_to_the_address_is_a_known_parameter():
    """A bound widget whose key is not in ``links.KNOWN`` is called "not understood" in every link that sets it
    (the Decoding page's ``stack=true`` was, each time "One strategy per row" was turned on)."""
    import ast
    from pathlib import Path

    from mi_lens_app import links

    root = Path(__file__).resolve().parent.parent
    bound = {}
    for path in [*root.glob("pages/*.py"), *root.glob("mi_lens_app/*.py"), root / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            kw = {k.arg: k.value for k in getattr(node, "keywords", [])} if isinstance(node, ast.Call) else {}
            if "bind" in kw and isinstance(kw.get("key"), ast.Constant):
                bound[kw["key"].value] = f"{path.name}:{node.lineno}"
    assert len(bound) > 30, bound  # the widgets are found
    unknown = {key: where for key, where in bound.items() if not links.known(key)}
    assert not unknown, unknown


def test_the_exact_mi_decoder_opens_pruned_at_mi_s_budget_on_sudoku(env):
    """mi_exact opened unpruned at gamma 1: a 25-clue puzzle took 35.6 s. Pruned at eps 1e-4 it took the same steps
    on 40 tuning puzzles in 2.7x less time (BENCHMARKS.md), at the budget MI-guided decoding was tuned to."""
    at = run_page("pages/3_Decoding.py", domain="9x9", a="mi_exact", b="top_prob")
    assert_clean(at)
    values = {box.key: box.value for box in at.number_input if box.key.startswith("a_mi_exact_")}
    assert values == {"a_mi_exact_gamma": 0.6, "a_mi_exact_lam": 1.0, "a_mi_exact_eps": 1e-4}, values


@pytest.mark.parametrize("url, base, name", [
    ("http://host:8501/", "", ""), ("http://host:8501", "", ""), (None, "", ""),
    ("http://host:8501/nosuch", "", "nosuch"), ("http://host:8501/nosuch/", "", "nosuch"),
    ("https://school.example/lens/", "lens", ""), ("https://school.example/lens/MI%20maps", "/lens/", "MI maps"),
])
def test_the_page_a_url_names_is_read_below_the_servers_base_path(url, base, name):
    from mi_lens_app.links import page_name
    assert page_name(url, base) == name


PAGES = ("Its pages: MI maps (/MI_maps), Exact vs estimated (/Exact_vs_estimated), Decoding (/Decoding), "
         "What-if (/What_if), Benchmarks (/Benchmarks), About (/About).")


@pytest.mark.parametrize("path, query, said", [
    ("nosuch", {}, 'MI Lens has no page "nosuch", so the home page opened. ' + PAGES),
    ("mi_maps", {"zz": "1"}, 'MI Lens has no page "mi_maps", so the home page opened (did you mean /MI_maps?). '
                             + PAGES + " Part of this link was not understood: zz=1."),
    ("", {}, None),
])
def test_a_link_to_a_page_the_app_does_not_have_names_it_and_the_pages_there_are(env, path, query, said):
    """Streamlit runs the home page for an address it has no page for, with a pop-up that names neither that page nor
    the app's ones: a teacher's mistyped link looked like a link to the home page."""
    from mi_lens_app import frame
    env.setattr(frame, "browser_url", lambda: f"http://127.0.0.1:8501/{path}")
    at = run_page("app.py", **query)
    assert_clean(at)
    assert [w.value for w in at.warning] == ([said] if said else [])


@pytest.mark.parametrize("address_after", ["", "nosuch"])
def test_a_note_of_an_unknown_page_stays_over_reruns_until_dismissed(env, address_after):
    """The note of a link to a page the app does not have went at the run after any click: Streamlit writes the home
    page's address after the first run (``address_after`` ""), so the next run found no page named. It stays, with
    the address rewritten or unchanged, until the visitor dismisses it; another page's visit drops it."""
    from mi_lens_app import frame
    address = {"path": "nosuch"}
    env.setattr(frame, "browser_url", lambda: f"http://127.0.0.1:8501/{address['path']}")
    at = run_page("app.py")
    said = 'MI Lens has no page "nosuch", so the home page opened. ' + PAGES
    assert [w.value for w in at.warning] == [said]
    address["path"] = address_after
    at.run()  # a click's rerun
    assert_clean(at)
    assert [w.value for w in at.warning] == [said]
    at.button(key="dismiss_missing_page").click().run()
    assert not at.warning and not [b for b in at.button if b.key == "dismiss_missing_page"]
    at.run()
    assert not at.warning  # dismissed: it stays closed
    address["path"] = "nosuch"
    at = run_page("app.py")
    at.switch_page("pages/6_About.py").run()
    address["path"] = ""
    at.switch_page("app.py").run()
    assert_clean(at)
    assert not at.warning  # the home page opened from the sidebar: no unknown page is why it shows


@pytest.mark.parametrize("path, query, said", [
    ("app.py", {"page": "Decoding"}, "page=Decoding (a page is named by the address's path: /MI_maps, "
                                     "/Exact_vs_estimated, /Decoding, /What_if, /Benchmarks, /About)"),
    ("pages/3_Decoding.py", {"a": "nosuch", "b": "eb"},  # no order selector here: no learned
     "a=nosuch (one of: mi, mi_exact, sequential, random, topk, top_prob, top_margin, eb, threshold, mask_predict)"),
    ("pages/1_MI_maps.py", {"model": "nosuch"}, "model=nosuch (one of: default, views, 8layer)"),
])
def test_a_link_part_not_understood_names_what_it_may_be(env, path, query, said):
    """``domain=banana``, ``a=nosuch`` and ``model=nosuch`` were each "not understood" without the values they take."""
    at = run_page(path, **query)
    assert_clean(at)
    (note,) = link_notes(at)
    assert said in note, note
