"""The app's protein domain under ``streamlit.testing.v1.AppTest``, on a tiny random protein MDM in a tmp dir
(independent of the shipped weights, which a training job may be rewriting), plus its input helpers."""

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, ProteinInputError, ProteinRecord, tokenize
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_core.mi.estimator import EstimatorConfig, MIEstimator, save_estimator
from mi_lens_app import protein_figures, strips
from mi_lens_app.domains import DOMAINS
from mi_lens_app.sequences import (
    Masking,
    MaskSpecError,
    load_protein_presets,
    parse_positions,
    protein_puzzle,
    random_positions,
    read_fasta_upload,
)
from mi_lens_app.texts import read_frame_line

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PROTEIN = DOMAINS["protein"]
SEQ = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ"  # 56 residues
LONG = "".join(np.random.default_rng(3).choice(list(AMINO_ACIDS), 250))


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A tiny random protein MDM and a matching estimator on disk: ``(model_path, estimator_path)``."""
    root = tmp_path_factory.mktemp("protein_models")
    torch.manual_seed(0)
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     root / "mdm.safetensors")
    est = MIEstimator(EstimatorConfig(d_in=32, n_values=20, d_node=16, d_proj=8, d_pair=8, init_bias=0.0))
    save_estimator(est, root / "est.safetensors")
    return root / "mdm.safetensors", root / "est.safetensors"


@pytest.fixture
def env(monkeypatch, weights):
    """The protein domain on the tiny model, without an estimator (the pruned-probe fallback)."""
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(weights[0]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")  # no background loads while tests swap models
    return monkeypatch


def run_page(path: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.switch_page(path)
    at.query_params["domain"] = "protein"
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def specs(at: AppTest) -> dict:
    """Plotly figure JSON of every chart, by its title."""
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {})
        out[title.get("text", "") if isinstance(title, dict) else str(title)] = spec
    return out


def find(at: AppTest, prefix: str) -> dict:
    found = [s for t, s in specs(at).items() if t.startswith(prefix)]
    assert found, f"no chart titled {prefix!r}: {list(specs(at))}"
    return found[0]


def strip_blocks(strip: dict) -> list[dict]:
    """A decode strip's coloured heatmaps, one a strip its window wraps into (``strips.strip_rows``)."""
    return [t for t in strip["data"] if t["type"] == "heatmap" and t["name"] == strip["data"][0]["name"]]


def array(value) -> np.ndarray:
    import base64

    if isinstance(value, dict):
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        return arr.reshape([int(s) for s in str(value.get("shape", len(arr))).split(",")])
    return np.asarray(value)


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


# ---- input helpers --------------------------------------------------------------------------------------


def test_parse_positions_reads_ranges_and_names_bad_parts():
    assert parse_positions("5-7, 2,5", 10) == [1, 4, 5, 6]
    with pytest.raises(MaskSpecError, match="'5-x' is not a position or a range"):
        parse_positions("5-x", 10)
    with pytest.raises(MaskSpecError, match="'8-3' runs backwards"):
        parse_positions("8-3", 10)
    with pytest.raises(MaskSpecError, match="'12' is outside 1-10"):
        parse_positions("12", 10)


def test_random_positions_are_seeded_and_sized():
    a = random_positions(100, 0.15, 4)
    assert a == random_positions(100, 0.15, 4) and len(a) == 15 and len(set(a)) == 15
    assert a != random_positions(100, 0.15, 5)
    with pytest.raises(MaskSpecError, match="mask rate must be in"):
        random_positions(100, 0.0, 0)


def test_protein_puzzle_masks_and_keeps_the_native_sequence():
    record = ProteinRecord("x", tokenize("MK_AY"))
    pz = protein_puzzle(PROTEIN, record, Masking("positions", positions="1"))
    assert pz.text == "_K_AY" and pz.blanks == [0, 2] and pz.solution_text == "MK_AY"
    assert pz.labels() == ["_1", "K2", "_3", "A4", "Y5"]
    with pytest.raises(MaskSpecError, match="no residue is masked"):
        protein_puzzle(PROTEIN, ProteinRecord("y", tokenize("MKAY")), Masking())


def test_fasta_upload_names_the_file_and_the_bad_letter():
    records, total, _ = read_fasta_upload("a.fasta", b">one\nMKV\nAY\n>two\nGG_\n")
    assert [r.name for r in records] == ["one", "two"] and records[1].masked == 1 and total == 2
    records, total, _ = read_fasta_upload("many.fa", b"".join(b">s%d\nMKV\n" % i for i in range(502)))
    assert len(records) == 500 and total == 502
    with pytest.raises(ProteinInputError, match="b.fa: .*'1' at 3"):
        read_fasta_upload("b.fa", b">bad\nMK1V\n")
    with pytest.raises(ProteinInputError, match="c.fa starts as UTF-16 text does"):
        read_fasta_upload("c.fa", b"\xff\xfe\x81")
    with pytest.raises(ProteinInputError, match="limited to 1 MiB"):
        read_fasta_upload("d.fa", b">big\n" + b"A" * (2**20 + 1))


def test_presets_are_real_masked_sequences_with_credit():
    presets = load_protein_presets()
    assert len(presets) >= 5
    raw = json.loads((ROOT / "assets/examples/protein_presets.json").read_text())
    assert "CC BY 4.0" in raw["about"] and "CATH" in raw["about"]
    for p, entry in zip(presets, raw["protein"]):
        assert 50 <= len(p.sequence) <= 120
        assert entry["length"] == len(p.sequence) and (tokenize(p.sequence) != MASK_ID).all()
        pz = protein_puzzle(PROTEIN, ProteinRecord(p.cath_id, tokenize(p.sequence)), p.masking)
        assert 5 <= len(pz.blanks) <= 25


def test_figure_caps_and_windows():
    rng = np.random.default_rng(0)
    n = 250
    mi = rng.random((n, n))
    mi = (mi + mi.T) / 2
    np.fill_diagonal(mi, 0)
    masked = np.ones(n, bool)
    labels = [f"A{i + 1}" for i in range(n)]
    heat = protein_figures.sequence_heatmap(mi, labels, start=200, size=120, title="MI")
    assert np.asarray(heat.data[0].z).shape == (120, 120) and heat.data[0].x[0] == "A131"  # clipped to fit
    assert "residues 131-250 of 250" in heat.layout.title.text.replace("<br>", " ")
    arcs = protein_figures.arc_figure("A" * n, labels, masked, mi, cap=150)
    tops = next(t for t in arcs.data if t.name == "arc tops")
    assert len(tops.x) == 150 and "the 150 strongest of 31125 pairs" in arcs.layout.title.text.replace("<br>", " ")
    near = np.zeros((n, n))  # one long pair (1-250) and one short one (100-104): a window on the short one
    near[0, 249] = near[249, 0] = 1.0
    near[99, 103] = near[103, 99] = 0.5
    windowed = protein_figures.arc_figure("A" * n, labels, masked, near, start=90, size=20)
    assert windowed.layout.yaxis.range[1] == pytest.approx(2 * 1.05)  # the short arc's height, not the long one's
    i, j, w, total = protein_figures.top_pairs(mi, masked, min_sep=4, limit=10)
    assert (j - i >= 4).all() and (np.diff(w) <= 0).all() and total == (n - 4) * (n - 3) // 2
    assert w[0] == pytest.approx(mi[np.triu_indices(n, 4)].max())


def test_decode_strip_colours_by_the_step_that_last_filled_each_residue():
    tokens = np.array([[0, 0, 0], [1, 2, 0], [1, 0, 3]])  # step 2 remasks position 2 and fills position 3
    chosen = np.array([[0, 0, 0], [1, 1, 0], [0, 0, 1]], bool)
    fig = strips.decode_strip(tokens, chosen, np.zeros((3, 3)), np.zeros((3, 3), bool), AMINO_ACIDS)
    np.testing.assert_array_equal(np.asarray(fig.data[0].z, float),
                                  [[np.nan] * 3, [1, 1, np.nan], [1, np.nan, 2]])
    assert np.asarray(fig.data[0].text).tolist() == [["_", "_", "_"], ["A", "C", "_"], ["A", "_", "D"]]
    outlined = fig.data[1]
    assert list(outlined.x) == [1, 2, 3] and np.allclose(list(outlined.y), [1 - 0.36, 1 - 0.36, 2 - 0.36])  # a bar above
    # the filled letters: white on step 1's dark purple, black on step 2's yellow (the top of a 1-2 scale)
    layers = {t.name: ~np.isnan(np.asarray(t.z, float)) for t in fig.data if t.name and t.name.startswith("filled")}
    assert layers["filled, on dark"].tolist() == [[False] * 3, [True, True, False], [True, False, False]]
    assert layers["filled, on light"].tolist() == [[False] * 3, [False] * 3, [False, False, True]]
    assert fig.data[0].texttemplate == ""  # the coloured layer writes no letters of its own


# ---- pages ----------------------------------------------------------------------------------------------


def test_mi_maps_preset_shows_the_sequence_views(env):
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    preset = load_protein_presets()[0]
    heat = find(at, "MI, exact (pruned, eps=0.001)")
    z = array(heat["data"][0]["z"])
    assert z.shape == (len(preset.sequence),) * 2 and np.allclose(z, z.T)
    labels = heat["data"][0]["x"]
    assert labels[0] == f"{preset.sequence[0]}1" and labels[19] == "_20"  # residue labels; 20-31 are masked
    contact = find(at, "Contact-map view")
    assert any(t["name"] == "pairs" for t in contact["data"]) and "|i−j| ≥ 4" in contact["layout"]["title"]["text"]
    arcs = find(at, "Arc graph")
    assert any(t["name"] == "residues" for t in arcs["data"])
    assert any(t["type"] == "heatmap" for t in find(at, "Per-residue entropy")["data"])
    assert any("Model: protein MDM (32-dim, 1 layers, max 256 residues; mdm.safetensors)" in c.value
               for c in at.sidebar.caption)
    assert any("No usable MI estimator" in w.value for w in at.warning)
    # the tiny random model's map is noise: percentile colours rank it, and a caption says why it glows anyway
    assert any("unsure of every masked residue" in c.value for c in at.caption)


def test_auto_model_says_why_it_fell_back_to_the_mdm(env, weights, tmp_path):
    import mi_core.domains.protein.model as protein_models

    env.setenv("MI_LENS_PROTEIN_MODEL", "auto")
    env.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))  # no ESM-C weights anywhere
    env.delenv("MI_LENS_ESMC_WEIGHTS", raising=False)
    env.setattr(protein_models, "DEFAULT_MDM", weights[0])
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any(c.value.startswith("Model: protein MDM") and "mdm.safetensors" in c.value
               and "(ESM-C not used: no ESM-C weights found in" in c.value for c in at.sidebar.caption)


def test_missing_protein_model_is_a_message(env):
    env.setenv("MI_LENS_PROTEIN_MODEL", "/nonexistent/protein.safetensors")
    at = run_page("pages/1_MI_maps.py")
    assert not at.exception
    assert any("protein MDM not found: /nonexistent/protein.safetensors" in e.value for e in at.error)


def test_mi_maps_with_an_estimator_uses_it(env, weights):
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", str(weights[1]))
    at = run_page("pages/1_MI_maps.py", ppreset=load_protein_presets()[1].name, win_size="120")
    assert_clean(at)
    assert not at.warning
    assert array(find(at, "MI, neural estimator")["data"][0]["z"]).shape == (63, 63)


def test_an_estimator_of_another_size_is_set_aside(env, tmp_path):
    est = MIEstimator(EstimatorConfig(d_in=16, n_values=20, d_node=8, d_proj=4, d_pair=4))
    save_estimator(est, tmp_path / "other.safetensors")
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", str(tmp_path / "other.safetensors"))
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert any("hidden states of size 16, but the model's are 32" in w.value for w in at.warning)
    find(at, "MI, exact (pruned")


def test_bad_pasted_sequence_names_the_letter_and_position(env):
    at = run_page("pages/1_MI_maps.py", psrc="paste", seq="MKTA1YIAK", mask_mode="rate")
    assert not at.exception
    assert any("'1' at 5" in e.value for e in at.main.error), [e.value for e in at.error]
    assert any(e.value.startswith("This sequence cannot be used: not amino-acid letters") for e in at.error)
    assert any("Correct the sequence in the sidebar to see its MI map" in i.value for i in at.info)
    shown = " ".join(m.value for m in at.markdown)
    assert "residue" in shown and "Sudoku rule" not in shown  # the sequence page's help, not the grid's
    empty = run_page("pages/3_Decoding.py", psrc="paste", seq="")
    assert_clean(empty)
    assert any("Pick the sequence in the sidebar to decode it" in i.value for i in empty.info)
    shown = " ".join(m.value for m in empty.markdown)
    assert "residue" in shown and "digits" not in shown
    at.text_area(key="seq").set_value(SEQ).run()  # fixing the input brings the page back
    assert_clean(at)
    assert array(find(at, "MI, exact")["data"][0]["z"]).shape == (56, 56)


def test_bad_mask_positions_are_an_error(env):
    at = run_page("pages/1_MI_maps.py", psrc="paste", seq=SEQ, mask_mode="positions", mask="3-90")
    assert not at.exception
    assert any("'3-90' is outside 1-56" in e.value for e in at.error)


def test_empty_mask_positions_prompt_and_keep_the_default_masking(env):
    """Choosing "positions" with the box still empty said "This sequence cannot be used: ... no residue is
    masked", an error twice on the page, for a box not yet typed in."""
    at = run_page("pages/1_MI_maps.py", mask_mode="positions")
    assert_clean(at)
    assert any("Type the residues to mask" in i.value for i in at.sidebar.info)
    default = run_page("pages/1_MI_maps.py")
    assert find(at, "MI, ")["data"][0]["x"] == find(default, "MI, ")["data"][0]["x"]  # the preset's masking


def test_pasted_sequence_with_nothing_masked_prompts_once(env):
    """A native sequence pasted with no _ or X was "This sequence cannot be used: no residue is masked" twice, in
    the sidebar and the main area: a step still to take, not a mistake."""
    for page in ("pages/1_MI_maps.py", "pages/3_Decoding.py"):
        at = run_page(page, psrc="paste", seq=SEQ)
        assert_clean(at)
        prompts = [i.value for i in at.info if "No residue is masked" in i.value]
        assert len(prompts) == 1 and "in the sidebar" in prompts[0], [i.value for i in at.info]
        assert not at.error, [e.value for e in at.error]  # the prompt, not an error in the sidebar as well
        assert at.text_area(key="seq").value == SEQ
    at.sidebar.radio(key="mask_mode").set_value("rate").run()  # masking some brings the page on
    assert_clean(at)
    assert not any("No residue is masked" in i.value for i in at.info)


def test_pasted_fasta_uses_the_first_record_and_its_masks(env):
    fasta = f">first test\n{SEQ[:30]}\n{SEQ[30:40]}__{SEQ[42:]}\n>second\nMKV\n"
    at = run_page("pages/1_MI_maps.py", psrc="paste", seq=fasta)
    assert_clean(at)
    assert any("56 residues, 2 masked; first of 2 records" in c.value for c in at.sidebar.caption)
    heat = find(at, "MI, exact")
    assert heat["data"][0]["x"][40:42] == ["_41", "_42"]


def test_uploaded_fasta_and_sharing_it(env):
    at = run_page("pages/1_MI_maps.py", psrc="upload")
    at.file_uploader(key="pupload").set_value(("bad.fasta", b">x\nMK*V\n", "text/plain")).run()
    assert not at.exception and any("bad.fasta" in e.value for e in at.error)
    at.file_uploader(key="pupload").set_value(("s.fasta", f">s1\n{SEQ}\n".encode(), "text/plain")).run()
    at.radio(key="mask_mode").set_value("rate").run()
    assert_clean(at)
    find(at, "MI, exact")
    next(b for b in at.button if b.label == "Put this sequence in the link").click().run()
    assert at.radio(key="psrc").value == "paste" and SEQ in at.text_area(key="seq").value


def test_an_upload_of_more_records_than_read_says_how_many_it_has(env):
    """600 records read as 500 and said "Sequence (500 in the file)"."""
    at = run_page("pages/1_MI_maps.py", psrc="upload")
    many = "".join(f">s{i}\n{SEQ}\n" for i in range(600)).encode()
    at.file_uploader(key="pupload").set_value(("many.fasta", many, "text/plain")).run()
    assert at.selectbox(key="pupload_row").label == "Sequence (the first 500 of 600 in the file)"


def test_an_upload_with_a_few_records_that_are_no_sequence_keeps_the_others(env):
    """A UniProt download with a selenoprotein (U) among its records was refused whole: the others are listed, and a
    caption names the records left out and why."""
    records, total, left_out = read_fasta_upload("d.fa", b">sel\nMKVUAY\n>ok\nMKVAY\n>gap\nMK-V\n>ok2\nGGA\n")
    assert [r.name for r in records] == ["ok", "ok2"] and total == 4
    assert [line.split(":")[0] for line in left_out] == ["sel", "gap"] and "'U' at 4" in left_out[0]
    at = run_page("pages/1_MI_maps.py", psrc="upload")
    data = f">sel\nMKVUAY\n>s1\n{SEQ}\n".encode()
    at.file_uploader(key="pupload").set_value(("uniprot.fasta", data, "text/plain")).run()
    assert not at.error and at.selectbox(key="pupload_row").label == "Sequence (1 in the file)"
    assert any(c.value.startswith("1 record of the file left out") and "sel: " in c.value for c in at.caption)


def test_mask_positions_that_name_no_position_are_an_error(env):
    at = run_page("pages/1_MI_maps.py", mask_mode="positions", mask=",")
    assert any("mask positions cannot be used: no position in ','" in e.value for e in at.error), [e.value for e in at.error]
    assert at.text_input(key="mask").value == ","


def test_long_sequence_is_windowed_and_edges_capped(env):
    at = run_page("pages/1_MI_maps.py", psrc="paste", seq=LONG, mask_mode="rate", mask_rate="0.1", win_size="120")
    assert_clean(at)
    heat = find(at, "MI, exact")
    assert array(heat["data"][0]["z"]).shape == (120, 120)
    assert ")<br>residues 1-120 of 250" in heat["layout"]["title"]["text"]  # one line was cut beside the contact map
    at.slider(key="arcs").set_value(150).run()
    at.slider(key="win").set_value(131).run()
    assert_clean(at)
    heat = find(at, "MI, exact")
    assert heat["data"][0]["x"][0].endswith("131") and "residues 131-250" in heat["layout"]["title"]["text"]
    arcs = find(at, "Arc graph")
    tops = next(t for t in arcs["data"] if t["name"] == "arc tops")
    title = arcs["layout"]["title"]["text"].replace("<br>", " ")
    assert len(array(tops["x"])) == 150 and "the 150 strongest of 300 pairs" in title  # 25 masked: 300 pairs
    # the arc graph follows the window (it drew all 250 letters at 7 px): the pairs are the whole sequence's
    assert "(residues 131-250 of 250)" in arcs["layout"]["title"]["text"].replace("<br>", " ")
    assert arcs["layout"]["xaxis"]["range"] == [130.5, 251]
    at.selectbox(key="win_size").set_value(60).run()
    arcs = find(at, "Arc graph")
    letters = next(t for t in arcs["data"] if t["name"] == "residues")
    assert letters["textfont"]["size"] == 14 and "(residues 131-190 of 250)" in arcs["layout"]["title"]["text"].replace("<br>", " ")


def test_a_window_opens_on_the_masked_residues_and_follows_a_new_mask(env):
    at = run_page("pages/3_Decoding.py", psrc="paste", seq=LONG, mask_mode="positions", mask="150-160", win_size="60")
    assert_clean(at)
    assert at.slider(key="win").value == 145  # 5 residues before the first masked one (150)
    at.text_input(key="mask").set_value("30-40").run()
    assert_clean(at)
    assert at.slider(key="win").value == 25  # the new mask's, not the last one's
    # (AppTest keeps the link's mask in its URL after set_value, so only the window is checked against the link)
    assert not any("win=" in t.value for t in [*at.caption, *at.markdown, *at.warning])


def test_exact_vs_estimated_on_a_protein(env, weights):
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", str(weights[1]))
    at = run_page("pages/2_Exact_vs_estimated.py", exact="true", prune="true", scale="linear")  # z: the values themselves
    assert_clean(at)
    maps = {t: array(s["data"][0]["z"]) for t, s in specs(at).items() if s["data"][0]["type"] == "heatmap"}
    assert "Estimated against exact, per pair" in specs(at)  # and the scatter of every masked pair
    n = len(load_protein_presets()[0].sequence)
    for title in ("Estimated", "Exact probe", "Estimated − exact", "Asymmetry |I(i→j) − I(j→i)|"):
        assert maps[title].shape == (n, n)
    np.testing.assert_allclose(maps["Estimated − exact"], maps["Estimated"] - maps["Exact probe"])
    assert {"Spearman", "Top-20 overlap", "Passes"} <= {m.label for m in at.metric}


def test_exact_vs_estimated_gives_a_weak_maps_errors_as_numbers(env):
    """The shipped protein MDM's pairs are all near 0.002 nats: its estimator's largest error (0.0006) and the probe's
    mean asymmetry read "< 0.001", as if there were none. Below a weak map they are numbers, to 3 digits."""
    env.setenv("MI_LENS_PROTEIN_MODEL", str(ROOT / "assets" / "protein_mdm.safetensors"))  # the shipped pair: the
    env.setenv("MI_LENS_PROTEIN_ESTIMATOR", str(ROOT / "assets" / "protein_mi_estimator.safetensors"))  # weak map
    at = run_page("pages/2_Exact_vs_estimated.py", exact="true", scale="linear")
    assert_clean(at)
    maps = {t: array(s["data"][0]["z"]) for t, s in specs(at).items() if s["data"][0]["type"] == "heatmap"}
    top, diff = maps["Exact probe"].max(), np.abs(maps["Estimated − exact"]).max()
    assert 0 < top < 0.01 and 0.01 * top <= diff < 0.001, (top, diff, [c.value for c in at.sidebar.caption])
    shown = {m.label: m.value for m in at.metric}["Largest |difference| (nats)"]
    assert not shown.startswith("<") and float(shown) == pytest.approx(diff, rel=5e-3), (shown, diff)


def test_a_pruned_probe_that_skips_nothing_says_so(env):
    """The pruned probe of a protein at eps 0.001 skipped nothing (every amino acid is likelier), and its passes read
    "241" over a green down arrow "-0 (0%)", a saving of nothing drawn as one."""
    at = run_page("pages/2_Exact_vs_estimated.py", exact="true", prune="true")
    assert_clean(at)
    passes = next(m for m in at.metric if m.label == "Passes")
    assert passes.delta == "none skipped", passes.delta


@pytest.mark.parametrize("a, b", [("mi", "eb"), ("mi_exact", "topk"), ("sequential", "random"),
                                  ("top_prob", "top_margin"), ("threshold", "mask_predict")])
def test_decoding_compares_every_strategy_on_a_protein(env, a, b):
    at = run_page("pages/3_Decoding.py", a=a, b=b, ppreset=load_protein_presets()[0].name)
    assert_clean(at)
    steps = [read_frame_line(m.value)["step"] for m in at.markdown if m.value.startswith("step\u00a0**")]
    assert len(steps) == 2 and all(s.startswith("0 / ") for s in steps)
    at.button(key="step_last").click().run()
    assert_clean(at)
    for side in (a, b):
        strip = find(at, f"{side}: step")
        blocks = strip_blocks(strip)
        assert len(blocks) == 2  # 58 residues beside the sidebar: two strips of 29
        z = np.hstack([array(b["z"]) for b in blocks])
        letters = [row for b in blocks for row in b["text"]]
        assert z.shape[1] == 58 and len(letters) == 2 * z.shape[0]  # rows are steps, columns residues
        assert "_" not in "".join(blocks[0]["text"][-1] + blocks[1]["text"][-1])  # the last row is fully decoded
        assert any(t["name"] == "unmasked at this step" for t in strip["data"])
    assert not at.success and sum("native sequence" in s.value for s in at.info) == 2  # neutral: a yardstick


def test_argmax_on_a_protein_says_what_a_weak_model_does_with_it(env):
    preset = load_protein_presets()[0].name
    at = run_page("pages/3_Decoding.py", a="mi", b="eb", ppreset=preset)  # the user's own model: not said of it
    assert_clean(at)
    assert not any("12 G's" in c.value for c in at.caption)
    env.setenv("MI_LENS_PROTEIN_MODEL", "mdm")  # the shipped small MDM, which the note describes
    at = run_page("pages/3_Decoding.py", a="mi", b="eb", ppreset=preset)
    assert_clean(at)
    assert any("12 G's" in c.value for c in at.caption)
    at.number_input(key="temp").set_value(1.0).run()
    assert_clean(at)
    assert not any("12 G's" in c.value for c in at.caption)


def test_decoding_mi_without_estimator_reads_the_probe(env):
    at = run_page("pages/3_Decoding.py", a="mi", b="eb", step="2")
    assert_clean(at)
    assert any("reads the exact probe pruned at eps=0.001" in c.value for c in at.caption)
    passes = [read_frame_line(m.value)["passes"] for m in at.markdown if m.value.startswith("step\u00a0**")]
    assert "+" in passes[0]  # the probe's passes are counted apart


def test_what_if_clamps_a_residue(env):
    at = run_page("pages/4_What_if.py", cell="_20", aa="W")
    assert_clean(at)
    metrics = {m.label: m.value for m in at.metric}
    assert "p(_20 = W)" in metrics and "Entropy of _20" in metrics
    words = " ".join(m.value for m in at.markdown)
    assert "Clamp a masked residue to one amino acid" in words and "Clamp a blank cell" not in words
    for prefix in ("Masked residues: entropy", "Entropy change", "Marginal of _20", "Marginals after _20 = W",
                   "MI before", "MI after", "After − before"):
        find(at, prefix)
    delta = array(find(at, "After − before")["data"][0]["z"])
    assert delta.shape == (58, 58)
    assert np.abs(delta[19]).max() > 0  # the clamped residue's own MI row disappears


@pytest.mark.parametrize("path, query, maps", [
    ("pages/1_MI_maps.py", {}, 3),  # the heatmap, the contact map's dots and the arc graph's
    ("pages/4_What_if.py", {"cell": "_20", "aa": "W"}, 2),  # MI before, MI after
])
def test_protein_mi_views_take_the_pages_colour_scale(env, path, query, maps):
    from tests.test_app_charts import mi_colour_bars

    at = run_page(path, scale="percentile", **query)
    assert_clean(at)
    bars = mi_colour_bars(specs(at))
    assert len(bars) == maps, bars
    assert all(text.endswith(" rank (percentile)") for text in bars.values()), bars


@pytest.fixture
def downloads(monkeypatch):
    """``{file name: the download's data}`` of every deferred download button a page run draws (AppTest keeps the
    button, not the function that makes its file)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    made, add = {}, MediaFileManager.add_deferred

    def keep(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        made[file_name] = data_callable
        return add(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    return made


def test_a_proteins_downloads_speak_of_residues_and_excel_reads_the_csv(env, downloads):
    """The pages' downloads of a protein: the MI CSV starts with a byte-order mark (Excel read it in the local code
    page) and heads its labels "residue"; the trace names residues and amino acids, not cells and digits, and is
    scored against the native sequence, not "solved"."""
    query = {"psrc": "paste", "seq": SEQ, "mask_mode": "positions", "mask": "3-6"}
    assert not run_page("pages/1_MI_maps.py", **query).exception
    data = downloads["mi.csv"]()
    assert data.startswith(b"\xef\xbb\xbf") and data.decode("utf-8-sig").startswith("residue,masked,M1,K2,_3,")
    assert not run_page("pages/3_Decoding.py", a="topk", b="eb", **query).exception
    trace = json.loads(downloads["trace_topk.json"]())
    entry = trace["steps"][1]["unmasked"][0]
    assert entry["residue"].startswith("_") and entry["amino_acid"] in AMINO_ACIDS and "digit" not in entry
    assert "matches_native" in trace and "solved" not in trace and trace["steps"][0]["sequence"] == trace["puzzle"]


def test_a_sequences_maps_download_the_mi_the_heatmap_and_the_arc_graph(env):
    """The grid's and the sequence's rows of downloads are one function (``downloads`` on the MI maps page), the
    graph named for what the page draws."""
    at = run_page("pages/1_MI_maps.py")
    assert_clean(at)
    assert [b.label for b in at.download_button] == ["MI as CSV", "MI as JSON", "Heatmap as HTML", "Arc graph as HTML"]


def test_pasted_fasta_uses_its_first_record_whatever_the_later_ones_hold():
    """The box says 'the first record is used', but an empty record, a gap or a U further down refused the
    whole paste with that record's error."""
    from mi_lens_app.sequences import first_record

    record, count = first_record(">mine\nmktayiakqr*\n>aligned\nMK-TAY\n>seleno\nMKU\n>empty\n")
    assert (record.name, record.text(), count) == ("mine", "MKTAYIAKQR", 4)
    assert first_record("MKTAY_IAK")[0].name == "sequence"
    with pytest.raises(ProteinInputError, match=r"^mine: not amino-acid letters: '-' at 3"):
        first_record(">mine\nMK-TAY\n>next\nMKT\n")


def test_the_weak_model_note_names_the_shipped_mdm_only(env):
    """With MI_LENS_PROTEIN_MODEL naming the user's own protein MDM, the sidebar said "This small protein MDM ... knows
    little more than amino-acid composition", the shipped model's measured weakness, of a model the app knows nothing
    of."""
    from mi_core.domain import get_domain
    from mi_lens_app import support

    assert support.runs_small_protein_mdm(get_domain("protein")) is False  # env: the tiny model of this test
    env.setenv("MI_LENS_PROTEIN_MODEL", "mdm")  # the shipped one
    assert support.runs_small_protein_mdm(get_domain("protein")) is True


@pytest.mark.parametrize("wrong", ["missing", "sudoku"])
def test_decoding_a_protein_with_a_wrong_model_file_is_a_message(env, tmp_path, model_path, wrong):
    """MI_LENS_PROTEIN_MODEL naming a Sudoku model (or no file) stopped the Decoding page with a ModelFileError
    traceback: its argmax note asked for the model outside the guard the sidebar's note has."""
    env.setenv("MI_LENS_PROTEIN_MODEL", str(model_path if wrong == "sudoku" else tmp_path / "none.safetensors"))
    at = run_page("pages/3_Decoding.py")
    assert not at.exception, at.exception
    assert any("MI_LENS_PROTEIN_MODEL" in e.value or "not found" in e.value for e in at.error), [e.value for e in at.error]
