"""The app's antibody views under ``streamlit.testing.v1.AppTest``, on a tiny random AntiBERTy in a tmp dir
(the mechanics; the real weights are slow on one CPU thread): the CDRs marked on every sequence view, the
protein pointing to the antibody model, and a non-antibody pointed to the protein domain."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mi_core.domains.antibody.model import AntiBERTy, BertConfig
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_lens_app import cdr_marks, protein_figures, strips
from tests.test_antibody_domain import save_folder
from tests.test_app_pages import array

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
LYSOZYME = "KVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDGRTPGSRNLCNIPCSALLSSDITASVNCAKKIVSDGNGMNAWVAWRNRCKGTDVQAWIRGCRL"
TRASTUZUMAB_VL = "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK"


@pytest.fixture(scope="module")
def weights(tmp_path_factory):
    """A tiny random AntiBERTy folder and a tiny protein MDM: ``(antiberty_folder, protein_mdm)``."""
    root = tmp_path_factory.mktemp("antibody_models")
    torch.manual_seed(0)
    tiny = AntiBERTy(BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64))
    folder = save_folder(tiny.eval(), root / "tiny_antiberty")
    save_protein_mdm(ProteinMDM(ProteinMDMConfig(max_len=256, d_model=32, n_layers=1, n_heads=2, d_ff=64)),
                     root / "mdm.safetensors")
    return folder, root / "mdm.safetensors"


@pytest.fixture
def env(monkeypatch, weights):
    monkeypatch.setenv("MI_LENS_ANTIBODY_MODEL", str(weights[0] / "pytorch_model.bin"))
    monkeypatch.setenv("MI_LENS_ANTIBODY_ESTIMATOR", "/nonexistent/antibody_est.safetensors")  # pruned probe
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(weights[1]))
    monkeypatch.setenv("MI_LENS_PROTEIN_ESTIMATOR", "/nonexistent/protein_est.safetensors")
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    monkeypatch.setenv("MI_LENS_WARM", "0")
    return monkeypatch


def run_page(path: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    at.switch_page(path)
    for key, value in query.items():
        at.query_params[key] = value
    return at.run()


def specs(at: AppTest) -> dict[str, dict]:
    out = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        title = spec["layout"].get("title", {})
        out[title.get("text", "") if isinstance(title, dict) else str(title)] = spec
    return out


def cdr_names(spec: dict) -> set[str]:
    """The CDR bands a chart draws (its shapes named ``CDR-H3`` ...)."""
    return {s["name"] for s in spec["layout"].get("shapes", []) if str(s.get("name", "")).startswith("CDR-")}


def strip_x(strip: dict) -> np.ndarray:
    """The residues (1-based) of a decode strip's columns, over the strips its window wraps into."""
    main = strip["data"][0]["name"]
    return np.concatenate([array(t["x"]) for t in strip["data"] if t["type"] == "heatmap" and t["name"] == main])


def assert_clean(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def test_cdr_spans_follow_the_labels():
    labels = ["E1", "V2·H1", "Q3·H1", "L4", "W5·H3", "G6·H3"]
    assert cdr_marks.cdr_spans(labels) == [("H1", 1, 3), ("H3", 4, 6)]
    assert cdr_marks.cdr_spans(["M1", "K2"]) == []
    fig = strips.decode_strip(torch.zeros(2, 6, dtype=torch.long).numpy(), [[False] * 6, [True] * 6],
                                       torch.zeros(2, 6).numpy(), [[False] * 6] * 2, "ACDEFGHIKLMNPQRSTVWY",
                                       regions=cdr_marks.cdr_spans(labels), start=3, size=3)
    assert cdr_names(json.loads(fig.to_json())) == {"CDR-H3"}  # H1 lies outside the window


def test_cdr_bands_sit_on_square_charts_and_on_top_of_the_others():
    # on the square heatmap and contact map the band followed the figure's top, 110 px above the plot at 1280 px
    labels = ["E1", "V2·H1", "Q3·H1", "L4", "W5·H3", "G6·H3"]
    mi = torch.rand(6, 6).numpy()
    masked = [True] * 6
    square = [protein_figures.sequence_heatmap(mi, labels), protein_figures.contact_figure(mi, labels, masked, min_sep=1)]
    for fig in square:
        refs = {s.yref for s in fig.layout.shapes if str(s.name).startswith("CDR-") and s.y1 in (1, cdr_marks.BAND[1])}
        assert refs == {"y domain"}
    strip = strips.marginal_strip(torch.rand(6, 20).numpy(), torch.rand(6).numpy(), labels, masked,
                                           "ACDEFGHIKLMNPQRSTVWY")
    assert {s.yref for s in strip.layout.shapes if str(s.name).startswith("CDR-")} == {"paper"}  # over both rows


def test_the_arc_graphs_cdr_bands_cover_their_own_residues_and_keep_their_names_in_a_window():
    """The arc graph draws residue k (0-based) at x = k + 1, but its CDR bands at x = k: CDR-H3 (99-109) was shaded
    over R98-_108; and a band cut by the window (H2, 50-66, from residue 61) was drawn without its name."""
    labels = ["E1", "V2·H1", "Q3·H1", "L4", "W5·H3", "G6·H3", "S7"]
    mi, masked = np.zeros((7, 7)), np.ones(7, bool)
    fig = json.loads(protein_figures.arc_figure("EVQLWGS", labels, masked, mi).to_json())
    bands = {s["name"]: (s["x0"], s["x1"]) for s in fig["layout"]["shapes"] if s.get("y1") == cdr_marks.BAND[1]}
    assert bands == {"CDR-H1": (1.5, 3.5), "CDR-H3": (4.5, 6.5)}  # over the letters at x 2-3 and 5-6
    letters = next(t for t in fig["data"] if t["name"] == "residues")
    assert [x for x, a in zip(array(letters["x"]), letters["text"]) if a in "WG"] == [5, 6]
    fig = json.loads(protein_figures.arc_figure("EVQLWGS", labels, masked, mi, start=2, size=4).to_json())
    names = {a["text"]: a["x"] for a in fig["layout"]["annotations"] if a.get("name", "").startswith("CDR-")}
    assert names == {"H1": 3.0, "H3": 5.5}, names  # H1's visible residue, 3; not its whole span's middle, 2.5


HEAVY = {"CDR-H1", "CDR-H2", "CDR-H3"}


def test_cdrs_are_marked_on_every_antibody_view(env):
    # the first preset: trastuzumab VH, CDR3 masked; all 120 residues (a window of 60 opens on 61-120)
    at = run_page("pages/1_MI_maps.py", domain="antibody", win_size="120")
    assert_clean(at)
    charts = specs(at)
    for prefix in ("Contact-map view", "Arc graph", "Per-residue entropy"):
        spec = next(s for t, s in charts.items() if t.startswith(prefix))
        assert cdr_names(spec) == HEAVY, prefix
    heat = [s for s in charts.values() if s["data"][0]["type"] == "heatmap" and s["data"][0].get("y")
            and len(s["data"][0]["y"]) > 100]
    assert heat and all(cdr_names(s) == HEAVY for s in heat)
    at = run_page("pages/3_Decoding.py", domain="antibody", a="sequential", b="topk", step="2")
    assert_clean(at)
    strips = [s for t, s in specs(at).items() if ": step " in t]
    # the strip opens on 60 residues from 61 (the masked CDR-H3 is 99-109): H2 (50-65) in part, not H1 (31-35)
    assert len(strips) == 2 and all(cdr_names(s) == {"CDR-H2", "CDR-H3"} for s in strips)
    assert all("(residues 61-120 of 120)" in s["layout"]["title"]["text"].replace("<br>", " ") for s in strips)
    at = run_page("pages/3_Decoding.py", domain="antibody", a="sequential", b="topk", step="2", win_size="120")
    assert_clean(at)
    strips = [s for t, s in specs(at).items() if ": step " in t]
    assert len(strips) == 2 and all(cdr_names(s) == HEAVY for s in strips)
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="89-97")
    assert_clean(at)
    arc = next(s for t, s in specs(at).items() if t.startswith("Arc graph"))
    assert "residues 48-107 of 107" in arc["layout"]["title"]["text"].replace("<br>", " ")
    assert cdr_names(arc) == {"CDR-L2", "CDR-L3"}  # L1 (24-34) lies left of the window, as on the strips


def test_a_narrower_window_zooms_the_antibody_strip(env):
    at = run_page("pages/3_Decoding.py", domain="antibody", a="sequential", b="topk", step="2", win_size="120")
    assert_clean(at)
    assert at.selectbox(key="win_size").value == 120 and "win" not in [s.key for s in at.slider]  # all 120 shown
    strip = next(s for t, s in specs(at).items() if t.startswith("sequential: step "))
    assert len(strip_x(strip)) == 120  # the whole VH, in two strips of 60
    at.selectbox(key="win_size").set_value(60).run()  # the strip's default on Decoding: 60 residues
    assert_clean(at)
    assert at.slider(key="win").value == 61  # 5 before the masked CDR-H3 (99-109), or the last window: 61-120
    at.slider(key="win").set_value(1).run()
    at.slider(key="win").set_value(61).run()
    strip = next(s for t, s in specs(at).items() if t.startswith("sequential: step "))
    x = strip_x(strip)
    assert x[0] == 61 and len(x) == 60
    assert "residues 61-120 of 120" in strip["layout"]["title"]["text"].replace("<br>", " ")
    assert cdr_names(strip) == {"CDR-H2", "CDR-H3"}  # H1 (31-35) is left of the window


def test_what_ifs_profiles_show_the_window_of_the_strip_below(env):
    """What-if on a VH with CDR-H3 masked drew its entropy and entropy-change bars over all 120 residues: the 11
    masked ones were bars a few pixels wide at 1024 px, beside a strip that showed residues 61-120. The profiles now
    show the page's one window, and name it."""
    at = run_page("pages/4_What_if.py", domain="antibody")
    assert_clean(at)
    assert at.slider(key="win").value == 61
    profiles = {t: s for t, s in specs(at).items() if t.startswith(("Masked residues", "Entropy change"))}
    assert len(profiles) == 2, list(specs(at))
    for title, spec in profiles.items():
        x = array(spec["data"][0]["x"])
        assert len(x) == 60 and str(x[0]).startswith("A61"), (title, x[:3])
        assert "61-120 of 120)" in title.replace("<br>", " ")  # "(residues 61-120 ...", or "(61-120" after "residues"
        assert cdr_names(spec) == {"CDR-H2", "CDR-H3"}


def test_protein_is_protein_and_points_to_the_antibody_model(env):
    env.setenv("MI_LENS_PROTEIN_MODEL", "mdm")  # the shipped small MDM, whose weakness the note states
    at = run_page("pages/1_MI_maps.py")
    assert at.radio(key="domain").value == "9x9"
    at.radio(key="domain").set_value("protein").run()
    assert_clean(at)
    assert at.radio(key="domain").value == "protein"  # a click on protein selects protein
    assert any("AntiBERTy" in i.value and "**antibody**" in i.value for i in at.sidebar.info)
    env.setenv("MI_LENS_ANTIBODY_MODEL", "/nonexistent/antiberty")  # AntiBERTy absent: nothing to point to
    at = run_page("pages/1_MI_maps.py")
    at.radio(key="domain").set_value("protein").run()
    assert at.radio(key="domain").value == "protein" and not any("AntiBERTy" in i.value for i in at.sidebar.info)


def test_a_switch_of_domain_starts_the_strategies_at_its_defaults(env, monkeypatch):
    monkeypatch.setenv("MI_LENS_SUDOKU_ESTIMATOR", "/nonexistent/sudoku_est.safetensors")  # mi reads the probe
    at = run_page("pages/3_Decoding.py", a="mi", b="eb")
    assert_clean(at)
    assert (at.number_input(key="a_mi_gamma").value, at.number_input(key="b_eb_gamma").value) == (0.6, 0.5)  # 9x9's
    at.radio(key="domain").set_value("antibody").run()
    assert_clean(at)
    assert (at.number_input(key="a_mi_gamma").value, at.number_input(key="a_mi_lam").value,
            at.number_input(key="b_eb_gamma").value) == (8.0, 1.0, 4.0)  # the CDR benchmark's settings
    assert not any("not understood" in m.value for m in [*at.markdown, *at.caption, *at.warning])
    at.radio(key="domain").set_value("9x9").run()
    assert (at.number_input(key="a_mi_gamma").value, at.number_input(key="b_eb_gamma").value) == (0.6, 0.5)


def test_a_link_naming_protein_keeps_the_small_mdm(env):
    at = run_page("pages/1_MI_maps.py", domain="protein")
    assert_clean(at)
    assert at.radio(key="domain").value == "protein"


def test_a_non_antibody_is_pointed_to_the_protein_domain_with_the_reason(env):
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=LYSOZYME)
    text = " ".join(e.value for e in at.error)
    assert "protein domain" in text and "not an antibody variable domain" in text


def test_what_if_opens_a_new_residue_on_its_likeliest_amino_acid(env):
    """The amino acid opened on the likeliest of the first residue shown, whichever residue was picked next (the
    grid's digit follows its cell)."""
    at = run_page("pages/4_What_if.py", domain="antibody")
    shown = at.selectbox(key="aa").value
    for other in at.selectbox(key="cell").options[::-1]:  # a residue whose likeliest letter is another
        at.selectbox(key="cell").set_value(other).run()
        assert_clean(at)
        bars = next(s for title, s in specs(at).items() if title.startswith("Marginal of "))["data"][0]
        assert bars["orientation"] == "h"  # the 20 letters down the side
        letter = bars["y"][int(np.argmax(array(bars["x"])))]
        assert at.selectbox(key="aa").value == letter, other
        if letter != shown:
            break
    else:
        pytest.fail(f"every masked residue's likeliest amino acid is {shown}")


def letter_sizes(spec: dict) -> list[int]:
    """The font sizes of a chart's residue and amino-acid letters: its text traces' and its axes' tick labels
    (the chart's font where an axis names none)."""
    base = spec["layout"].get("font", {}).get("size", 12)
    sizes = [t["textfont"]["size"] for t in spec["data"] if "text" in t.get("mode", "") and "textfont" in t]
    for name, axis in spec["layout"].items():
        if name.startswith(("xaxis", "yaxis")) and axis.get("visible", True) and axis.get("tickvals", True):
            sizes.append(axis.get("tickfont", {}).get("size", base))
    return sizes


@pytest.mark.parametrize("path", ["pages/1_MI_maps.py", "pages/4_What_if.py"])
def test_an_antibodys_letters_are_readable_on_a_projector_by_default(env, path):
    """At 1024 px an antibody's 120 letters were drawn 9 px tall in the arc graph and 11 px on the heatmap's and the
    strip's axes: a window of 60 residues opens (on the masked CDR-H3, 61-120), and every letter is 14 px or more."""
    at = run_page(path, domain="antibody")
    assert_clean(at)
    assert at.selectbox(key="win_size").value == 60 and at.slider(key="win").value == 61
    # the contact map draws dots, not letters; the marginal's 20 amino acids stay 11 px, to fit upright in a third
    # of a 1280-px page (at 14 px they ran into one another there)
    charts = {t: s for t, s in specs(at).items() if not t.startswith(("Contact-map", "Marginal of"))}
    windowed = [t for t in charts if "61-120 of 120" in t]
    assert windowed, list(charts)
    small = {t[:40]: min(letter_sizes(s)) for t, s in charts.items() if min(letter_sizes(s), default=14) < 14}
    assert not small, small


@pytest.mark.parametrize("path, query, maps", [("pages/2_Exact_vs_estimated.py", {}, 1),
                                               ("pages/2_Exact_vs_estimated.py", {"exact": "true"}, 4),
                                               ("pages/4_What_if.py", {}, 3)])
def test_an_antibodys_maps_keep_a_plain_proteins_plot_on_every_page(env, path, query, maps):
    """Exact vs estimated and What-if drew an antibody's maps 420-480 px tall, as a Sudoku's: its second title line,
    CDR bands and labels such as ``_101·H3`` left the plot 217-277 px (a plain protein's 318-377). Each map is now as
    tall as on the MI maps page (``protein_figures.map_height``), its plot a plain protein's in ``MAP_HEIGHT``."""
    from mi_lens_app import figures

    at = run_page(path, domain="antibody", **query)
    assert_clean(at)
    square = [s for s in specs(at).values() if s["layout"].get("yaxis", {}).get("scaleanchor") == "x"]
    assert len(square) == maps, len(square)
    longer = round(protein_figures.LABEL_CHAR_PX * (len("_101·H3") - protein_figures.PLAIN_LABEL))
    plots = [s["layout"]["height"] - s["layout"]["margin"]["t"] for s in square]
    assert plots == [figures.MAP_HEIGHT - 50 + longer] * maps  # MI maps' antibody heatmap's, below its title


def test_the_mask_field_takes_an_antibodys_regions_as_the_command_line_does(env):
    """`--mask-positions cdr3` works on the command line, but the app's mask field said "'cdr3' is not a position
    or a range like 5-20"; it now reads regions (cdr3, CDR-L3 as its bands name them) and names a bad one."""
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="cdr3")
    assert_clean(at)
    assert any("107 residues, 9 masked" in c.value for c in at.sidebar.caption)  # CDR-L3, 89-97
    assert "regions: cdr3" in at.text_input(key="mask").label
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="CDR-L3, 1")
    assert_clean(at)
    assert any("107 residues, 10 masked" in c.value for c in at.sidebar.caption)
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="cdr4")
    assert "unknown region 'cdr4'" in " ".join(e.value for e in at.error) and not at.exception
    # a bad mask is the mask field's to correct: it read "This sequence cannot be used: mask positions: ...",
    # then "Correct the sequence in the sidebar"
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="0,5")
    assert [e.value for e in at.main.error] == ["These mask positions cannot be used: '0' is outside 1-107 (the "
                                                "sequence has 107 residues)"]
    assert any(i.value == "Correct the mask positions in the sidebar to see its MI map." for i in at.main.info)


def test_a_pasted_antibody_is_not_credited_to_the_presets_source_and_its_cdrs_are_residue_numbers(env):
    """A pasted VL's sidebar said "Kabat CDR1 24-34, ... antibodies: Jain et al. 2017": the user's own antibody
    credited to the presets' paper, and residue numbers read as Kabat numbers (CDR-H3 is Kabat H95-H102, but
    residues 99-109 of trastuzumab's VH). The presets' source is credited under a preset alone."""
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=TRASTUZUMAB_VL, mask_mode="positions",
                  mask="cdr3")
    assert_clean(at)
    cdrs = [c.value for c in at.sidebar.caption if "CDR1" in c.value]
    assert cdrs and "Jain" not in cdrs[0] and "AntiBERTy" in cdrs[0], cdrs
    assert "Kabat-defined CDRs at residues CDR1 24-34, CDR2 50-56, CDR3 89-97" in cdrs[0]
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="preset")
    assert_clean(at)
    assert any("CDR1" in c.value and "Jain et al. 2017" in c.value for c in at.sidebar.caption)


def test_pasted_csv_is_read_as_the_command_line_reads_it(env):
    """The domain reads a CSV with vh/vl columns (README), but pasted into the app the same lines were one
    sequence: "not amino-acid letters: ',' at 5, ..."; now the first chain is used, and a swapped file is named."""
    from tests.test_antibody_domain import SEQUENCES

    text = "name,vh,vl\n" + "".join(f"{n},{h},{v}\n" for n, (h, v) in list(SEQUENCES.items())[:2])
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=text, mask_mode="positions", mask="cdr3")
    assert_clean(at)
    assert any("120 residues, 11 masked; first of 4 records" in c.value for c in at.sidebar.caption)
    assert "CSV (name,vh,vl)" in at.text_area(key="seq").label
    heavy, light = SEQUENCES["trastuzumab"]
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="paste", seq=f"name,vh,vl\nmine,{light},{heavy}\n")
    assert "columns swapped" in " ".join(e.value for e in at.error) and not at.exception


def test_an_uploaded_csv_is_read_as_the_command_line_reads_it(env):
    """The upload took FASTA only: a name,vh,vl file (the form the command line and the paste box read) could not
    be picked. Each chain is a record, picked by name; a swapped file is named once, with the file's name."""
    from tests.test_antibody_domain import SEQUENCES

    text = "name,vh,vl\n" + "".join(f"{n},{h},{v}\n" for n, (h, v) in list(SEQUENCES.items())[:2])
    at = run_page("pages/1_MI_maps.py", domain="antibody", psrc="upload")
    assert "CSV (name,vh,vl)" in at.sidebar.get("file_uploader")[0].proto.label
    at.file_uploader(key="pupload").set_value(("mine.csv", text.encode(), "text/csv")).run()
    assert_clean(at)
    picker = at.selectbox(key="pupload_row")
    assert picker.label == "Sequence (4 in the file)" and "VL" in picker.format_func(1)
    heavy, light = SEQUENCES["trastuzumab"]
    at.file_uploader(key="pupload").set_value(("swapped.csv", f"name,vh,vl\nx,{light},{heavy}\n".encode(),
                                               "text/csv")).run()
    errors = " ".join(e.value for e in at.error)
    assert not at.exception and "columns swapped" in errors
    assert all(e.value.count("swapped.csv") == 1 for e in at.error)  # the file named once, not once a layer


def test_an_uploaded_csv_of_many_antibodies_counts_all_its_chains():
    """A CSV's chains were counted as the 500 listed ("Sequence (500 in the file)") when it held more."""
    from mi_core.domain import get_domain
    from mi_lens_app.sequences import read_fasta_upload
    from tests.test_antibody_domain import SEQUENCES

    heavy, light = SEQUENCES["trastuzumab"]
    text = "name,vh,vl\n" + "".join(f"ab{i},{heavy},{light}\n" for i in range(300))
    records, total, _ = read_fasta_upload("many.csv", text.encode(), get_domain("antibody"))
    assert len(records) == 500 and total == 600


def test_a_plain_pasted_sequence_is_called_the_sequence():
    """One pasted sequence (no FASTA header) was named "sequence 1" in its errors, as if one of several."""
    from mi_core.domain import get_domain
    from mi_lens_app.sequences import first_record

    record, count = first_record(LYSOZYME)
    assert record.name == "sequence" and count == 1
    with pytest.raises(ValueError, match=r"^sequence: not an antibody variable domain"):
        get_domain("antibody").read(record.text(), record.name)


PHONE = "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0 Mobile Safari/537.36"


@pytest.mark.parametrize("agent", [PHONE, None])
def test_a_phones_arc_graph_keeps_its_letters_apart(env, agent, monkeypatch):
    """On a 390-px phone the arc graph drew 60 residues of 14 px in a 230-px plot (3.8 px each): the letters ran
    together. A phone opens a window of 30 residues, lays the colour bar under the plot, and sizes the letters so
    they fit the plot; a larger screen keeps 60 residues of 14 px. A phone's window of 120 (60 letters a line) keeps
    letters of 10 px in a chart that scrolls sideways (``fit_letters_css``): shrunk to fit, they were 7 px in the figure and 4.2 on the
    screen."""
    from mi_lens_app import screen

    monkeypatch.setattr(screen, "browser_agent", lambda: agent)
    at = run_page("pages/1_MI_maps.py", domain="antibody")
    assert_clean(at)
    phone = agent == PHONE
    assert at.selectbox(key="win_size").value == (30 if phone else 60)
    arcs = next(s for t, s in specs(at).items() if t.startswith("Arc graph"))
    letters = next(t for t in arcs["data"] if t.get("name") == "residues")
    lo, hi = arcs["layout"]["xaxis"]["range"]
    count, size = round(hi - lo), letters["textfont"]["size"]
    assert (count, size) == ((30, protein_figures.LETTER_PX) if phone else (60, protein_figures.LETTER_PX))
    if phone:  # each letter within its share of a phone's plot, the colour bar below the plot
        assert count * size * protein_figures.LETTER_WIDTH <= protein_figures.PHONE_PLOT_PX
        bar = next(t for t in arcs["data"] if t.get("name") == "arc tops")["marker"]["colorbar"]
        assert bar["orientation"] == "h"
    assert (arcs["layout"].get("dragmode") is False) == phone  # a swipe scrolls the page and the chart, not zooms
    assert protein_figures.letter_px(60, narrow=True) == protein_figures.MIN_LETTER_PX


def test_a_strip_of_60_residues_wraps_into_two_of_30_with_their_own_cdr_bands():
    """Beside the sidebar (a 1280 x 800 projector zoomed to 150% leaves the strip 505 px) a decode's 60 letters a row
    were 7.7 px: the window wraps into two strips of 30, each with its residue axis and its CDR bands, in letters
    sized for 30; presenting keeps one row of the page's whole width."""
    assert strips.strip_rows(60) == 2 and strips.strip_rows(30) == 1
    assert strips.strip_rows(60, wide=True) == 1
    labels = [f"A{i + 1}" + ("·H2" if 49 <= i < 66 else "·H3" if 98 <= i < 109 else "") for i in range(120)]
    tokens = np.ones((3, 120), int)
    tokens[0, 98:109] = 0
    chosen = np.zeros((3, 120), bool)
    chosen[1, 98:104], chosen[2, 104:109] = True, True
    args = (tokens, chosen, np.zeros((3, 120)), np.zeros((3, 120), bool), "ACDEFGHIKLMNPQRSTVWY")
    fig = strips.decode_strip(*args, start=60, size=60, regions=cdr_marks.cdr_spans(labels), wrap=2)
    coloured = [t for t in fig.data if t.type == "heatmap" and t.name == "filled at step"]
    assert [(int(t.x[0]), int(t.x[-1])) for t in coloured] == [(61, 90), (91, 120)]
    assert [t.xaxis for t in coloured] == ["x", "x2"] and sum(bool(t.showscale) for t in coloured) == 1
    assert fig.layout.xaxis.range == (60.5, 90.5) and fig.layout.xaxis2.range == (90.5, 120.5)
    size = strips.strip_letter_px(30)
    assert size > strips.strip_letter_px(60) and coloured[0].textfont.size == size
    bands = {(s.name, s.xref, s.yref) for s in fig.layout.shapes if s.y0 == cdr_marks.BAND[0]}
    assert bands == {("CDR-H2", "x", "y domain"), ("CDR-H3", "x2", "y2 domain")}
    assert fig.layout.xaxis2.title.text == "residue" and not fig.layout.xaxis.title.text
    one = strips.decode_strip(*args, start=60, size=60, regions=cdr_marks.cdr_spans(labels))
    assert fig.layout.height > one.layout.height  # the second strip below the first


@pytest.mark.parametrize("present, strips", [("false", 2), ("true", 1)])
def test_the_antibody_decoding_page_wraps_its_strip_beside_the_sidebar(env, present, strips):
    at = run_page("pages/3_Decoding.py", domain="antibody", a="sequential", b="topk", step="2", present=present)
    assert_clean(at)
    strip = next(s for t, s in specs(at).items() if "residues 61-120 of 120" in t.replace("<br>", " ")
                 or t.startswith("Residues 61-120"))
    main = strip["data"][0]["name"]
    assert len([t for t in strip["data"] if t["type"] == "heatmap" and t["name"] == main]) == strips
    css = next(h.proto.body for h in at.get("html") if ".st-key-frame_a " in h.proto.body)
    assert f"/ {60 // strips * protein_figures.LETTER_WIDTH:g})" in css  # the letters capped to a row of 30 (or 60)


def test_the_arc_graphs_60_letters_alternate_between_two_lines_of_30():
    """Beside the open sidebar a 1280 x 800 projector zoomed to 150% leaves the arc graph 505 px: a window of 60
    letters on one line were 7.7 px (11.5 at 1024 x 768). They alternate between two lines, each residue at its own
    position under its arcs' ends, sized for 30 a line; every arc is still drawn, the chart as tall as before."""
    assert protein_figures.letter_lines(60) == 2 and protein_figures.letter_lines(30) == 1
    rng = np.random.default_rng(0)
    mi = rng.random((120, 120))
    letters, cdr3 = "ACDEFGHIKLMNPQRSTVWY" * 6, np.arange(120) // 11 == 9
    fig = protein_figures.arc_figure(letters, list(letters), cdr3, (mi + mi.T) / 2, start=60, size=60)
    residues = next(t for t in fig.data if t.name == "residues")
    x, y = np.asarray(residues.x), np.asarray(residues.y)
    assert list(x) == list(range(61, 121)) and "".join(residues.text) == letters[60:]  # the window's, in order
    upper, lower = sorted(set(y), reverse=True)
    assert (y[::2] == upper).all() and (y[1::2] == lower).all() and fig.layout.yaxis.range[0] < lower
    assert residues.textfont.size == protein_figures.letter_px(30) == protein_figures.LETTER_PX
    assert len(next(t for t in fig.data if t.name == "arc tops").x) == 55 and fig.layout.height == 420
    short = protein_figures.arc_figure(letters[:30], list(letters[:30]), np.ones(30, bool), mi[:30, :30])
    assert set(next(t for t in short.data if t.name == "residues").y) == {0.0}  # 30 letters: one line, as before


def test_the_antibody_pages_arc_graph_caps_its_letters_for_30_a_line(env):
    at = run_page("pages/1_MI_maps.py", domain="antibody")
    assert_clean(at)
    arcs = next(s for t, s in specs(at).items() if t.startswith("Arc graph"))
    letters = next(t for t in arcs["data"] if t.get("name") == "residues")
    assert len(set(array(letters["y"]).tolist())) == 2
    css = next(h.proto.body for h in at.get("html") if ".st-key-arcs_graph " in h.proto.body)
    assert f"/ {30 * protein_figures.LETTER_WIDTH:g})" in css  # the letters capped to a line of 30, not 60


def test_an_uploaded_csv_is_read_as_csv_quoted_or_with_columns_it_lacks():
    """A quoted CSV ("name","vh","vl", as R's write.csv writes one), which the command line reads, was read in the
    app as one sequence and refused for its commas and quotes as 'not amino-acid letters'; so was a .csv without
    vh/vl columns, where the command line names the header."""
    from mi_core.domain import get_domain
    from mi_lens_app.sequences import read_fasta_upload
    from tests.test_antibody_domain import SEQUENCES

    heavy, light = SEQUENCES["trastuzumab"]
    quoted = f'"name","vh","vl"\n"tras","{heavy}","{light}"\n'.encode()
    records, total, _ = read_fasta_upload("quoted.csv", quoted, get_domain("antibody"))
    assert [r.name for r in records] == ["tras VH", "tras VL"] and total == 2
    other = f"name,heavy_chain,light_chain\ntras,{heavy},{light}\n".encode()
    with pytest.raises(ValueError, match=r"^other.csv: no vh, vl or sequence column in the header \['name', "
                                         r"'heavy_chain', 'light_chain'\]$"):
        read_fasta_upload("other.csv", other, get_domain("antibody"))


def test_a_fasta_file_named_csv_is_read_in_the_app_and_named_on_the_command_line(tmp_path):
    """A FASTA file saved as .csv: the command line said only that its header ['>ab1'] has no vh column; it now
    says the file is FASTA by its '>'. The app's upload keeps reading it as FASTA."""
    from mi_core.domain import get_domain
    from mi_core.domains.antibody.sequence import AntibodyInputError, read_file
    from mi_lens_app.sequences import read_fasta_upload
    from tests.test_antibody_domain import SEQUENCES

    heavy, light = SEQUENCES["trastuzumab"]
    text = f">ab1 VH\n{heavy}\n>ab1 VL\n{light}\n"
    records, total, _ = read_fasta_upload("chains.csv", text.encode(), get_domain("antibody"))
    assert [r.name for r in records] == ["ab1 VH", "ab1 VL"] and total == 2
    path = tmp_path / "chains.csv"
    path.write_text(text)
    with pytest.raises(AntibodyInputError, match=r"chains.csv: no vh, vl or sequence column .* \(it starts with '>', "
                                                  r"as FASTA does: give it a FASTA name"):
        read_file(path)
