"""The antibody domain: parsing and the variable-domain check (golden errors), Kabat CDRs against published
values, AntiBERTy in plain torch (a tiny random one for the mechanics; the installed weights where the
package is here, else skipped with the reason), and the commands with their fixed names and JSON keys."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
import torch

from mi_core import cli
from mi_core.domain import get_domain
from mi_core.domains.antibody.model import (
    AntiBERTy,
    AntiBERTyMissing,
    BertConfig,
    bert_name,
    convert_state,
    weights_folder,
)
from mi_core.domains.antibody.sequence import (
    AntibodyInputError,
    parse_text,
    read_chain,
    read_file,
    select_rows,
)
from mi_core.models.base import ModelFileError

DEV_CSV = Path(__file__).resolve().parents[1] / "../shared/data/protein/antibodies_jain2017_dev.csv"


def available() -> bool:
    """Whether AntiBERTy's weights are installed here."""
    try:
        weights_folder()
    except AntiBERTyMissing:
        return False
    return True


def export_state(model: AntiBERTy) -> dict[str, torch.Tensor]:
    """The inverse of :func:`convert_state`, with the tied ``cls.predictions.bias``."""
    out = {bert_name(k): v for k, v in model.state_dict().items()}
    out["cls.predictions.bias"] = out["cls.predictions.decoder.bias"]
    return out


def save_folder(model: AntiBERTy, folder: Path) -> Path:
    """Write ``pytorch_model.bin`` and ``config.json`` as the package lays them out; returns the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    torch.save(export_state(model), folder / "pytorch_model.bin")
    (folder / "config.json").write_text(json.dumps(asdict(model.cfg_bert), indent=2) + "\n")
    return folder


needs_antiberty = pytest.mark.skipif(not available(), reason="antiberty==0.1.3 (the AntiBERTy weights) is not "
                                     "installed: pip install -r requirements.txt")
needs_dev = pytest.mark.skipif(not DEV_CSV.is_file(), reason=f"the dev antibodies are not at {DEV_CSV}")

# Jain et al. 2017 (Dataset S2) sequences; Kabat CDRs as published (e.g. the IMGT/mAb-DB and Kabat entries)
TRASTUZUMAB = ("EVQLVESGGGLVQPGGSLRLSCAASGFNIKDTYIHWVRQAPGKGLEWVARIYPTNGYTRYADSVKGRFTISADTSKNTAYLQMNSLRAEDTAVYYCSRWGGDGFYAMDYWGQGTLVTVSS",
               "DIQMTQSPSSLSASVGDRVTITCRASQDVNTAVAWYQQKPGKAPKLLIYSASFLYSGVPSRFSGSRSGTDFTLTISSLQPEDFATYYCQQHYTTPPTFGQGTKVEIK")
BEVACIZUMAB = ("EVQLVESGGGLVQPGGSLRLSCAASGYTFTNYGMNWVRQAPGKGLEWVGWINTYTGEPTYAADFKRRFTFSLDTSKSTAYLQMNSLRAEDTAVYYCAKYPHYYGSSHWYFDVWGQGTLVTVSS",
               "DIQMTQSPSSLSASVGDRVTITCSASQDISNYLNWYQQKPGKAPKVLIYFTSSLHSGVPSRFSGSGSGTDFTLTISSLQPEDFATYYCQQYSTVPWTFGQGTKVEIK")
RITUXIMAB = ("QVQLQQPGAELVKPGASVKMSCKASGYTFTSYNMHWVKQTPGRGLEWIGAIYPGNGDTSYNQKFKGKATLTADKSSSTAYMQLSSLTSEDSAVYYCARSTYYGGDWYFNVWGAGTTVTVSA",
             "QIVLSQSPAILSASPGEKVTMTCRASSSVSYIHWFQQKPGSSPKPWIYATSNLASGVPVRFSGSGSGTSYSLTISRVEAEDAATYYCQQWTSNPPTFGGGTKLEIK")
KABAT = {
    "trastuzumab": (("DTYIH", "RIYPTNGYTRYADSVKG", "WGGDGFYAMDY"), ("RASQDVNTAVA", "SASFLYS", "QQHYTTPPT")),
    "bevacizumab": (("NYGMN", "WINTYTGEPTYAADFKR", "YPHYYGSSHWYFDV"), ("SASQDISNYLN", "FTSSLHS", "QQYSTVPWT")),
    "rituximab": (("SYNMH", "AIYPGNGDTSYNQKFKG", "STYYGGDWYFNV"), ("RASSSVSYIH", "ATSNLAS", "QQWTSNPPT")),
}
SEQUENCES = {"trastuzumab": TRASTUZUMAB, "bevacizumab": BEVACIZUMAB, "rituximab": RITUXIMAB}
LYSOZYME = "KVFGRCELAAAMKRHGLDNYRGYSLGNWVCAAKFESNFNTQATNRNTDGSTDYGILQINSRWWCNDGRTPGSRNLCNIPCSALLSSDITASVNCAKKIVSDGNGMNAWVAWRNRCKGTDVQAWIRGCRL"


def cdr_texts(chain):
    return tuple(chain.text()[slice(*chain.regions[c])] for c in ("CDR1", "CDR2", "CDR3"))


@pytest.mark.parametrize("name", sorted(KABAT))
def test_kabat_cdrs_match_the_published_ones(name):
    heavy, light = (read_chain(s, name) for s in SEQUENCES[name])
    assert (heavy.chain, light.chain) == ("H", "L")
    assert (cdr_texts(heavy), cdr_texts(light)) == KABAT[name]
    assert heavy.regions["FR1"] == (0, 30) and heavy.regions["FR4"][1] == heavy.length  # regions tile the chain


@needs_dev
def test_every_dev_antibody_is_read_with_its_chain_type():
    chains = read_file(DEV_CSV)
    assert len(chains) == 200
    assert [c.chain for c in chains] == ["H", "L"] * 100
    for c in chains:
        spans = [c.regions[r] for r in ("FR1", "CDR1", "FR2", "CDR2", "FR3", "CDR3", "FR4")]
        assert spans[0][0] == 0 and spans[-1][1] == c.length
        assert all(a[1] == b[0] for a, b in zip(spans, spans[1:]))
    assert len(select_rows(chains, "71-100")) == 60 and select_rows(chains, "1-1")[0].name == "abituzumab VH"

@pytest.mark.parametrize("rows, match", [
    ("90-80", r"^--rows 90-80: the range runs backwards; give the first row first \(--rows 80-90\)$"),  # it said the
    ("0-2", r"^--rows 0-2: rows count from 1 \(give --rows 1-2\)$"),  # form, A-B (1-based, inclusive) or all
    ("2-", r"^--rows must be A-B \(1-based, inclusive\) or all, got '2-'$"),
])
def test_a_rows_range_says_what_is_wrong_with_it(rows, match):
    chains = [read_chain(TRASTUZUMAB[0])]
    with pytest.raises(ValueError, match=match):
        select_rows(chains, rows)


@pytest.mark.parametrize("text", [
    "name,heavy,light\ntrastuzumab,{h},{l}\nrituximab,{rh},{rl}\n",  # the columns the CSV reader takes besides vh/vl
    ">trastuzumab_H\n{h}\n>trastuzumab_L\n{l}\n>rituximab_H\n{rh}\n>rituximab_L\n{rl}\n",  # a pair FASTA's names
    ">trastuzumab|heavy\n{h}\n>trastuzumab|light\n{l}\n>rituximab-HC\n{rh}\n>rituximab-LC\n{rl}\n",
])
def test_rows_count_antibodies_whatever_suffix_names_their_chains(text):
    """--rows 1-1 took the heavy chain alone of a CSV with heavy/light columns (its chains are named "X heavy" and
    "X light") and of a FASTA naming the chains X_H and X_L: rows counted chains, "the file holds 4 antibodies"."""
    chains = parse_text(text.format(h=TRASTUZUMAB[0], l=TRASTUZUMAB[1], rh=RITUXIMAB[0], rl=RITUXIMAB[1]))
    assert [c.chain for c in select_rows(chains, "1-1")] == ["H", "L"]
    with pytest.raises(ValueError, match="holds 2 antibodies"):
        select_rows(chains, "1-3")


def test_a_file_naming_two_chains_alike_is_refused_with_its_name(tmp_path):
    """--rows 1-2 took three chains of a file whose first and third antibodies share a name."""
    text = read_chain(TRASTUZUMAB[0]).text()
    path = tmp_path / "twice.csv"
    path.write_text(f"name,vh\nab1,{text}\nab2,{text}\nab1,{text}\n")
    with pytest.raises(AntibodyInputError, match=r"twice.csv: two chains are named 'ab1 VH'"):
        read_file(path)


@pytest.mark.parametrize("text, match", [
    (LYSOZYME, "not an antibody variable domain.*protein domain"),
    (TRASTUZUMAB[0] * 5, "longer than the 510"),
    (TRASTUZUMAB[0][:60] + "B1" + TRASTUZUMAB[0][62:], "not amino-acid letters: '1' at 62"),
    (TRASTUZUMAB[0][:60] + "U" + TRASTUZUMAB[0][61:], r"not amino-acid letters: 'U' at 61 \(U and O are rare residues .*write X or _ in their place"),
    (TRASTUZUMAB[0].replace("WGQG", "AGQG"), "no W-G-x-G \\(heavy\\) or F-G-x-G \\(light\\) motif"),
    (TRASTUZUMAB[0][:21] + "S" + TRASTUZUMAB[0][22:], "no conserved cysteine near position 22"),
    (TRASTUZUMAB[0] + "GGGGSGGGGSGGGGS" + TRASTUZUMAB[1], "follow CDR3's framework-4 motif.*VH or VL alone"),
    (TRASTUZUMAB[0][:40], "shorter than any variable domain"),
    ("", "empty"),
])
def test_bad_input_is_named(text, match):
    with pytest.raises(AntibodyInputError, match=match):
        parse_text(text) if text == "" else read_chain(text)


def mask_residues(sequence: str, first: int, last: int) -> str:
    """``sequence`` with residues ``first``-``last`` (1-based, inclusive) masked."""
    return sequence[:first - 1] + "_" * (last - first + 1) + sequence[last:]


@pytest.mark.parametrize("chain, first, last, hidden", [
    (0, 20, 24, "first conserved cysteine"), (0, 93, 96, "second conserved cysteine"),
    (1, 85, 90, "second conserved cysteine"), (0, 36, 37, "tryptophan after CDR1"), (0, 110, 120, "W-G-x-G")])
def test_a_masked_run_over_a_conserved_residue_reads_without_regions(chain, first, last, hidden):
    """The first masked position of the run was taken for the residue: trastuzumab VH masked at 20-24 read CDR1
    as 29-35 (it is 31-35), at 93-96 CDR3 as 96-109 (99-109); VL masked at 85-90 CDR3 as 86-97 (89-97)."""
    masked = mask_residues(TRASTUZUMAB[chain], first, last)
    read = read_chain(masked)
    assert read.regions == {} and f"residues {first}-{last} are masked over" in read.unplaced and hidden in read.unplaced
    domain = get_domain("antibody")
    assert domain.annotation(read.tokens) == {"chain": read.chain, "unplaced": read.unplaced}
    assert domain.parse_input(masked) == read.tokens.tolist()
    with pytest.raises(ValueError, match=f"residues {first}-{last} are masked .* so its regions cannot be placed"):
        domain.named_positions(read.tokens, "cdr3")
    assert domain.named_positions(read.tokens, "95-97") == [94, 95, 96]  # residues by number still work


def test_a_constant_region_is_refused_masked_or_not():
    """The framework-4 tail check ran only after the regions, so masking residues 20-24 let VH + CH1 through."""
    with_ch1 = TRASTUZUMAB[0] + "ASTKGPSVFPLAPSSKSTSGGTAALGCLVKDYFPEPVTVSWNSGALTSGVHTFPAVLQSSGLYSLSSVVTVPSSSLGTQTYICNVNHKPSNTKVDKKV"
    for text in (with_ch1, mask_residues(with_ch1, 20, 24)):
        with pytest.raises(AntibodyInputError, match="residues follow CDR3's framework-4 motif"):
            read_chain(text)


@pytest.mark.parametrize("chain, first, last", [(0, 22, 22), (0, 96, 96), (0, 99, 109), (0, 110, 111), (1, 88, 88),
                                                (1, 23, 23)])
def test_a_lone_masked_conserved_residue_or_a_masked_cdr_keeps_the_regions(chain, first, last):
    native = read_chain(TRASTUZUMAB[chain])
    read = read_chain(mask_residues(TRASTUZUMAB[chain], first, last))
    assert read.unplaced == "" and read.regions == native.regions


def test_plain_text_is_named_in_its_errors():
    with pytest.raises(AntibodyInputError, match="^my input: not an antibody variable domain"):
        get_domain("antibody").read(LYSOZYME, "my input")


def test_masked_residues_match_any_motif_and_parse_formats():
    masked = TRASTUZUMAB[0].replace("WGQG", "W__G").replace("CSRW", "_SRW")
    chain = read_chain(masked)
    assert chain.chain == "H" and cdr_texts(chain)[0] == "DTYIH"
    fasta = f">tras VH\n{TRASTUZUMAB[0]}\n>tras VL\n{TRASTUZUMAB[1]}\n"
    assert [c.name for c in parse_text(fasta)] == ["tras VH", "tras VL"]
    csv_text = f"name,vh,vl\ntras,{TRASTUZUMAB[0]},{TRASTUZUMAB[1]}\n"
    assert [(c.name, c.chain) for c in parse_text(csv_text)] == [("tras VH", "H"), ("tras VL", "L")]
    domain = get_domain("antibody")
    with pytest.raises(ValueError, match="holds 2 chains"):
        domain.parse_input(fasta)
    assert domain.named_positions(chain.tokens, "cdr3") == list(range(*chain.regions["CDR3"]))
    assert domain.named_positions(chain.tokens, "cdr3,2-3")[:2] == [1, 2]
    with pytest.raises(ValueError, match=r"'9-20-3' is not a region \(cdr3, cdrs, fr1..fr4\) or residues like 9-20"):
        domain.named_positions(chain.tokens, "cdr3,9-20-3")
    assert domain.annotation(chain.tokens)["regions"]["CDR1"] == [31, 35]


def tiny_model(seed: int = 0) -> AntiBERTy:
    torch.manual_seed(seed)
    model = AntiBERTy(BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64))
    return model.eval()


@pytest.fixture
def tiny_folder(tmp_path):
    return save_folder(tiny_model(), tmp_path / "tiny_antiberty")


def test_state_names_round_trip_and_padding_is_invisible(tiny_folder):
    from mi_core.domains.antibody.model import load

    model, description = load(str(tiny_folder), "cpu")
    assert "AntiBERTy" in description and model.max_len == 510 and model.hidden_size == 32
    assert set(convert_state(export_state(model), model)) == set(model.state_dict())
    assert {"bert.encoder.layer.0.attention.self.query.weight", "cls.predictions.bias"} <= set(export_state(model))
    tokens = torch.as_tensor(read_chain(TRASTUZUMAB[1]).tokens)[None].clone()
    tokens[0, 88:97] = 0
    with torch.no_grad():
        one = model(tokens)
        padded = model(torch.cat([torch.cat([tokens, torch.full((1, 9), 21)], 1)] * 2))
    assert one.logits.shape == (1, tokens.shape[1], 20) and one.hidden.shape == (1, tokens.shape[1], 32)
    torch.testing.assert_close(padded.logits[1, :tokens.shape[1]], one.logits[0], atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="longer than the 510"):
        model(torch.ones((1, 511), dtype=torch.long))


def test_a_saved_folder_loads_to_the_same_outputs(tiny_folder):
    from mi_core.domains.antibody.model import load_antiberty

    tokens = torch.as_tensor(read_chain(TRASTUZUMAB[1]).tokens)[None].clone()
    tokens[0, 88:97] = 0
    with torch.no_grad():
        saved, loaded = tiny_model()(tokens), load_antiberty(tiny_folder)(tokens)
    assert torch.equal(saved.logits, loaded.logits) and torch.equal(saved.hidden, loaded.hidden)


@pytest.mark.parametrize("change, match", [
    ("{oops", r"config.json is not a valid config: Expecting property name"),
    ("[1]", r"config.json is not a config: it holds a JSON list"),
    ({"hidden_size": "32"}, r"config.json: config hidden_size must be an integer, got '32'"),
    ({"num_attention_heads": 2.0}, r"config.json: config num_attention_heads must be an integer, got 2.0"),
    ({"layer_norm_eps": float("nan")}, r"config.json: config layer_norm_eps: nan is not a finite number"),
    ({"num_attention_heads": 3}, r"config does not describe AntiBERTy: hidden_size 32 is not divisible"),
    ({"max_position_embeddings": 100_000}, r"pytorch_model.bin does not fit the config .*config.json: 1 tensor\(s\) "
                                           r"differ in shape, e.g. position.weight is \(512, 32\) in the file"),
])
def test_a_bad_antiberty_config_is_named(tiny_folder, change, match):
    """Wrong types, NaN and sizes of another model name the file and the field, and allocate nothing."""
    from mi_core.domains.antibody.model import load_antiberty

    config = tiny_folder / "config.json"
    text = change if isinstance(change, str) else json.dumps({**json.loads(config.read_text()), **change})
    config.write_text(text)
    with pytest.raises(ModelFileError, match=match):
        load_antiberty(tiny_folder)


def test_unreadable_antiberty_weights_are_named_as_antiberty(tiny_folder):
    """A cut weights file was called "not an ESM-C checkpoint" (the loader borrowed ESM-C's reader and text)."""
    from mi_core.domains.antibody.model import load_antiberty

    weights = tiny_folder / "pytorch_model.bin"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelFileError, match=r"pytorch_model.bin is not AntiBERTy weights \(a torch state dict\) "
                                             r"\(torch.load: .+\)") as err:
        load_antiberty(tiny_folder)
    assert "ESM-C" not in str(err.value)


def test_missing_package_is_one_line(monkeypatch):
    import importlib.util

    from mi_core.domains.antibody import model as ab

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ab.AntiBERTyMissing, match="pip install antiberty==0.1.3"):
        ab.weights_folder()


@needs_antiberty
def test_installed_antiberty_predicts_masked_residues():
    from mi_core.domains.antibody.model import load_antiberty

    model = load_antiberty()
    assert model.weights_path.name == "pytorch_model.bin"
    chain = read_chain(TRASTUZUMAB[0])
    tokens = torch.as_tensor(chain.tokens)[None].clone()
    framework = [5, 10, 40, 70, 85]  # conserved framework residues: AntiBERTy knows them
    tokens[0, framework] = 0
    with torch.no_grad():
        out = model(tokens)
    assert out.hidden.shape == (1, chain.length, 512)
    picked = out.logits[0, framework].argmax(-1) + 1
    assert (picked == torch.as_tensor(chain.tokens[framework])).float().mean() >= 0.8


def test_commands_with_a_tiny_model(tiny_folder, tmp_path, capsys):
    data = tmp_path / "abs.csv"
    data.write_text("name,vh,vl\n" + "".join(f"{n},{h},{v}\n" for n, (h, v) in SEQUENCES.items()))
    out = tmp_path / "probe.json"
    assert cli.main(["probe", "antibody", "--sequence", TRASTUZUMAB[1], "--mask-positions", "89-91", "--model",
                     str(tiny_folder), "--json", str(out), "--no-progress"]) == 0
    res = json.loads(out.read_text())
    assert res["masked_residues"] == [89, 90, 91] and res["passes"] == 61 and np.asarray(res["mi"]).shape == (107, 107)
    assert res["annotation"]["chain"] == "L"
    assert cli.main(["probe", "antibody", "--fasta", str(data), "--record", "2", "--mask-positions", "cdr2",
                     "--model", str(tiny_folder), "--json", str(out), "--no-progress", "--force"]) == 0
    assert json.loads(out.read_text())["masked_residues"] == list(range(50, 57))

    out = tmp_path / "eval.json"
    evals = ["eval-model", "antibody", "--csv", str(data), "--draws", "1", "--model", str(tiny_folder), "--json", str(out)]
    assert cli.main([*evals, "--rows", "1-3", "--composition-rows", "3-3"]) == 2  # the baseline holds scored chains
    assert "--rows and --composition-rows share 2 chain(s)" in capsys.readouterr().err and not out.exists()
    assert cli.main([*evals, "--rows", "1-2", "--composition-rows", "3-3"]) == 0
    res = json.loads(out.read_text())
    assert {"perplexity", "composition_perplexity", "by_region", "by_chain"} <= set(res)
    assert res["n_chains"] == 4 and set(res["by_region"]) >= {"CDR3", "CDRs", "FR1"}

    out = tmp_path / "bench.json"
    assert cli.main(["bench", "antibody", "--csv", str(data), "--rows", "all", "--region", "cdr3", "--sampler",
                     "topk", "--set", "k=2", "--model", str(tiny_folder), "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["n"] == 6 and 0 <= res["recovery"] <= 1 and "recovery_se" in res
    assert res["mean_passes"] == pytest.approx(np.mean([-(-len(c[2]) // 2) for h in KABAT.values() for c in h]))
    for seq, start in zip(res["sequences"], [read_chain(s) for pair in SEQUENCES.values() for s in pair]):
        cdr3 = slice(*start.regions["CDR3"])
        assert seq[:cdr3.start] == start.text()[:cdr3.start]  # the framework is never changed

    md = tmp_path / "report.md"
    assert cli.main(["sweep", "antibody", "--csv", str(data), "--rows", "1-2", "--region", "cdr3", "--grid",
                     "sequential", "--grid", "topk:k=2", "--model", str(tiny_folder), "--json", str(tmp_path / "sweep.json"),
                     "--markdown", str(md)]) == 0
    text = md.read_text()
    assert "<!-- sweep-antibody-" in text and "| sequential |" in text and "| topk |" in text and " ± " in text


def test_generate_redesigns_a_region_and_keeps_the_rest(tiny_folder, tmp_path, capsys):
    """``generate`` was the protein domain's alone: an antibody's CDR3 could be probed and benchmarked but not
    redesigned. Now the template's region is filled, the framework kept, and the designs printed as FASTA."""
    heavy = TRASTUZUMAB[0]
    cdr3 = slice(*read_chain(heavy).regions["CDR3"])
    fasta = tmp_path / "cdr3.fa"
    assert cli.main(["generate", "antibody", "--template", heavy, "--mask-positions", "cdr3", "--n", "3",
                     "--model", str(tiny_folder), "--fasta", str(fasta)]) == 0
    lines = fasta.read_text().splitlines()
    assert lines == capsys.readouterr().out.splitlines() and len(lines) == 6
    assert all(h.startswith(">sample_") and f"passes={cdr3.stop - cdr3.start}" in h for h in lines[::2])
    for design in lines[1::2]:
        assert len(design) == len(heavy) and "_" not in design
        assert design[:cdr3.start] + design[cdr3.stop:] == heavy[:cdr3.start] + heavy[cdr3.stop:]
    assert cli.main(["generate", "antibody", "--template", heavy, "--model", str(tiny_folder)]) == 2
    assert "--template has no masked residue to generate" in capsys.readouterr().err
    # a FASTA record names its designs (they were all sample_1..n, so two antibodies' designs clashed in one file)
    assert cli.main(["generate", "antibody", "--template", f">tras_VH heavy\n{heavy}", "--mask-positions", "cdr3",
                     "--n", "2", "--model", str(tiny_folder)]) == 0
    assert [h.split()[0] for h in capsys.readouterr().out.splitlines()[::2]] == [">tras_VH_design_1",
                                                                                ">tras_VH_design_2"]


def test_generate_scores_each_design_by_its_pseudo_log_likelihood(tiny_folder, tmp_path, capsys):
    """``generate`` printed designs with no score: an engineer could not rank them, nor compare them with the
    template's own CDR3. ``--score`` gives each header the pseudo-log-likelihood over the filled residues (checked
    here one masked residue at a time) and says the template's own on stderr."""
    from mi_core.domains.antibody.model import load

    heavy = TRASTUZUMAB[0]
    start, stop = read_chain(heavy).regions["CDR3"]
    assert cli.main(["generate", "antibody", "--template", heavy, "--mask-positions", "cdr3", "--n", "3", "--score",
                     "--model", str(tiny_folder), "--device", "cpu"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    model, _ = load(str(tiny_folder), "cpu")

    def pll(text: str) -> float:
        tokens = torch.as_tensor(read_chain(text).tokens)
        total = 0.0
        with torch.no_grad():
            for p in range(start, stop):
                masked = tokens.clone()[None]
                masked[0, p] = model.mask_id
                logp = model(masked).logits.float().log_softmax(-1)[0, p]
                total += float(logp[int((model.value_tokens == tokens[p]).nonzero()[0, 0])])
        return total

    for header, design in zip(lines[::2], lines[1::2]):
        score, mean = (float(header.split(f" {k}=")[1].split()[0]) for k in ("pll", "pll_mean"))
        assert score == pytest.approx(pll(design), abs=2e-3) and mean == pytest.approx(score / (stop - start), abs=2e-3)
    native = float(captured.err.split("pll=")[1].split()[0])
    assert f"at the {stop - start} filled positions" in captured.err and native == pytest.approx(pll(heavy), abs=2e-3)


def test_non_antibody_gets_one_line_pointing_to_protein(capsys):
    assert cli.main(["probe", "antibody", "--sequence", LYSOZYME, "--mask-positions", "5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sequence") or err.startswith("error: sequence")
    assert "not an antibody variable domain" in err and "protein domain" in err and "Traceback" not in err


@pytest.mark.parametrize("count", ["1", "201"])
def test_max_masked_outside_its_range_is_refused_by_its_flag(count, tmp_path, capsys):
    """--max-masked takes 2..200 (each state masks at least two residues): the command line says so, naming the
    flag (the config's own check named the field, max_masked), before any file is read."""
    out = tmp_path / "shards"
    assert cli.main(["make-estimator-data", "antibody", "--out", str(out), "--max-masked", count]) == 2
    err = capsys.readouterr().err
    assert f"error: argument --max-masked: {count} is outside the accepted range 2..200" in err and not out.exists()


def test_estimator_pipeline_with_a_tiny_model(tiny_folder, tmp_path):
    """make-estimator-data -> train-estimator -> eval-estimator -> estimate, and bench with the MI sampler."""
    data = tmp_path / "abs.csv"
    data.write_text("name,vh,vl\n" + "".join(f"{n},{h},{v}\n" for n, (h, v) in SEQUENCES.items()))
    shards = tmp_path / "shards"
    assert cli.main(["make-estimator-data", "antibody", "--model", str(tiny_folder), "--out", str(shards), "--csv",
                     str(data), "--rows", "1-2", "--states", "4", "--shard-size", "2", "--max-masked", "4"]) == 0
    from mi_core.train.estimator_data import load_shards

    shard, manifest = load_shards(shards)
    assert manifest["domain"] == "antibody" and shard["masked"].sum(1).max() <= 4
    estimator = tmp_path / "est.safetensors"
    assert cli.main(["train-estimator", "--data", str(shards), "--out", str(estimator), "--steps", "4",
                     "--eval-every", "2", "--variants", "log:free", "--batch", "2", "--d-node", "16"]) == 0
    out = tmp_path / "evalest.json"
    assert cli.main(["eval-estimator", "antibody", "--csv", str(data), "--rows", "3-3", "--states", "2", "--model",
                     str(tiny_folder), "--estimator", str(estimator), "--max-masked", "3", "--timing-states", "1",
                     "--no-markdown", "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert {"spearman", "speedup", "n_states"} <= set(res) and res["n_states"] == 2
    out = tmp_path / "estimate.json"
    masked = TRASTUZUMAB[0][:98] + "_" * 5 + TRASTUZUMAB[0][103:]
    assert cli.main(["estimate", "antibody", "--sequence", masked, "--estimator", str(estimator), "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert np.asarray(res["mi"]).shape == (120, 120) and res["passes"] == 1
    out = tmp_path / "bench.json"
    assert cli.main(["bench", "antibody", "--csv", str(data), "--rows", "1-1", "--sampler", "mi", "--set",
                     f"estimator={estimator}", "--set", "gamma=1", "--model", str(tiny_folder), "--json", str(out)]) == 0
    assert json.loads(out.read_text())["n"] == 2


def test_eval_estimator_refuses_held_out_rows_the_estimator_was_trained_on(tiny_folder, tmp_path, capsys):
    """eval-estimator's held-out chains must not be chains the estimator's data came from (its JSON records the
    file and rows): rows that overlap them, or a copy of the file, are refused in one line before any probe."""
    from mi_core.domains.antibody.states import AntibodyDataConfig, AntibodyStates

    data = tmp_path / "abs.csv"
    data.write_text("name,vh,vl\n" + "".join(f"{n},{h},{v}\n" for n, (h, v) in SEQUENCES.items()))
    copy = tmp_path / "copy.csv"
    copy.write_text(data.read_text())
    trained = {"csv": str(data), "rows": "1-2"}
    assert AntibodyStates(AntibodyDataConfig(csv=str(data), rows="3-3")).overlap(trained) is None
    for csv, rows in ((data, "2-3"), (copy, "1-1")):
        problem = AntibodyStates(AntibodyDataConfig(csv=str(csv), rows=rows)).overlap(trained)
        assert problem is not None and "2 of the" in problem and "rows 1-2 of abs.csv" in problem
    shards = tmp_path / "shards"
    assert cli.main(["make-estimator-data", "antibody", "--model", str(tiny_folder), "--out", str(shards), "--csv",
                     str(data), "--rows", "1-2", "--states", "2", "--shard-size", "2", "--max-masked", "3"]) == 0
    estimator = tmp_path / "est.safetensors"
    assert cli.main(["train-estimator", "--data", str(shards), "--out", str(estimator), "--steps", "1",
                     "--variants", "log:free", "--batch", "2", "--d-node", "16"]) == 0
    out = tmp_path / "evalest.json"
    capsys.readouterr()
    assert cli.main(["eval-estimator", "antibody", "--csv", str(data), "--rows", "2-3", "--states", "2", "--model",
                     str(tiny_folder), "--estimator", str(estimator), "--max-masked", "3", "--timing-states", "1",
                     "--no-markdown", "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("error:") == 1 and "Traceback" not in err
    assert "trained on" in err and "--rows" in err and not out.exists()


def test_eval_model_scores_only_known_residues_and_needs_a_baseline_of_each_chain_type():
    from mi_core.domains.antibody.evaluate import evaluate, frequencies, score_chains

    heavy, light = (read_chain(s, n) for s, n in zip(TRASTUZUMAB, ("t VH", "t VL")))
    text = heavy.text()
    unknown = read_chain(text[:5] + "X" + text[6:9] + "X" + text[10:], "x VH")  # X: masked, no native to score
    rows = score_chains(tiny_model(), [unknown], rate=0.9, draws=3, seed=0, device="cpu")
    assert rows and all(r["token"] != 0 for r in rows)
    assert len(rows) == 3 * round(0.9 * (heavy.length - 2))
    np.testing.assert_allclose(frequencies([unknown])[None], frequencies([read_chain(text[:5] + text[6:9] + text[10:])])[None])
    with pytest.raises(ValueError, match="holds no L chain"):
        evaluate(tiny_model(), [heavy, light], [read_chain(s) for s in (BEVACIZUMAB[0], RITUXIMAB[0])], draws=1)
    c1 = text.index("C", 15)
    hidden = read_chain(text[:c1] + "__" + text[c1 + 2:], "h VH")  # a masked run over the first cysteine
    assert hidden.unplaced
    with pytest.raises(ValueError, match="h VH: residues .* cannot be placed"):
        evaluate(tiny_model(), [hidden], [read_chain(BEVACIZUMAB[0])], draws=1)


def test_recovery_counts_only_residues_with_a_known_native():
    from mi_core.domains.antibody.infill import RecoveryMetric

    metric = RecoveryMetric([np.array([1, 2, 0, 4, 5])], ["H"])  # the native's residue 3 is unknown (X)
    metric.update(0, np.array([1, 0, 0, 0, 5]), np.array([1, 2, 7, 4, 5]), passes=3)
    res = metric.compute()
    assert res["recovery"] == 1.0 and res["recovery_pooled"] == 1.0 and res["mean_masked"] == 2


def test_a_cdr_named_for_the_other_chain_type_is_refused():
    heavy, light = read_chain(TRASTUZUMAB[0]), read_chain(TRASTUZUMAB[1])
    assert heavy.positions("H3") == heavy.positions("cdr3") and light.positions("l1") == light.positions("CDR1")
    with pytest.raises(ValueError, match="L3 is a CDR of a light .VL. chain; sequence is a heavy .VH. chain: give cdr3 or H3"):
        heavy.positions("L3")
    with pytest.raises(ValueError, match="H2 is a CDR of a heavy"):
        light.positions("H2")


def test_one_antibodys_heavy_and_light_chain_under_one_name_are_named_as_such(tmp_path):
    """A FASTA file (or a CSV with a sequence column) giving an antibody's VH and VL under one name was told to
    'give each antibody a name of its own', which it had; the message now names the pair and the fix."""
    vh, vl = (read_chain(seq).text() for seq in TRASTUZUMAB)
    path = tmp_path / "pairs.fa"
    path.write_text(f">ab1\n{vh}\n>ab1\n{vl}\n")
    with pytest.raises(AntibodyInputError, match=r"pairs.fa: two chains are named 'ab1' \(its heavy and light chain\): "
                                                 r"name them 'ab1 VH' and 'ab1 VL'"):
        read_file(path)
    path.write_text(f">ab1\n{vh}\n>ab1\n{vh}\n")
    with pytest.raises(AntibodyInputError, match=r"named 'ab1': give each antibody a name of its own"):
        read_file(path)


@pytest.mark.parametrize("missing", ["NA", "N/A", "nan", "None", "-", "#N/A"])
def test_a_missing_chain_written_as_r_pandas_or_excel_write_it_is_an_empty_cell(tmp_path, missing):
    """A VL written 'NA' (R's write.csv), 'nan', 'None', '-' or '#N/A' was read as a sequence and refused as 'U and O
    are rare residues' ('None'), 'alignment gaps' ('-') or too short for a variable domain; it is skipped as an empty
    cell is."""
    vh = read_chain(TRASTUZUMAB[0]).text()
    path = tmp_path / "missing.csv"
    path.write_text(f"name,vh,vl\nab1,{vh},{missing}\n")
    assert [c.name for c in read_file(path)] == ["ab1 VH"]
