"""ESM-C adapter, offline weight finding, the protein model resolver and ``probe protein``.

ESM-C runs here as a tiny randomly initialised model built from the ``esm`` package's own classes, so
the adapter is checked against the package's own tokenization and forward pass, never against numbers
written down by hand. Tests that need ``esm`` skip when it is missing, except under ``CI=true``, where
they must run (as the browser tests treat Chromium).
"""

import json
import os
import sys

import numpy as np
import pytest
import torch

from mi_core.cli import main
from mi_core.domains.protein import AMINO_ACIDS, MASK_ID, PAD_ID, tokenize
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig, save_protein_mdm
from mi_core.domains.protein.model import load_protein_model
from mi_core.mi.probe import probe
from mi_core.models.base import ModelFileError

ESM_ORDER = "LAGVSERTIDPKQNFYMHWC"  # ids 4..23 in esm's sequence vocabulary
SEQS = ["MKTAYIAKQR", "GS_LVE"]


def need_esm():
    """The ``esm.models.esmc`` module, or a skip (a failure under CI=true)."""
    if os.environ.get("CI") == "true":
        import esm.models.esmc  # noqa: F401  (CI must have it: an ImportError fails the test)
    return pytest.importorskip("esm.models.esmc", reason="the esm package is not installed")


def tiny_esmc(d_model=64, n_heads=4, n_layers=2, seed=0):
    need_esm()
    from esm.models.esmc import ESMC
    from esm.tokenization import get_esmc_model_tokenizers

    torch.manual_seed(seed)
    return ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers, tokenizer=get_esmc_model_tokenizers(),
                use_flash_attn=False).eval()


@pytest.fixture
def esmc():
    return tiny_esmc()


@pytest.fixture
def adapter(esmc):
    from mi_core.domains.protein.esmc import ESMCAdapter

    return ESMCAdapter(esmc)


@pytest.fixture
def no_weights(tmp_path, monkeypatch):
    """No ESM-C weights anywhere: an empty Hugging Face cache and no MI_LENS_ESMC_WEIGHTS."""
    monkeypatch.delenv("MI_LENS_ESMC_WEIGHTS", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_hub"))
    return tmp_path / "empty_hub"


@pytest.fixture
def tiny_mdm_path(tmp_path, monkeypatch):
    """A tiny protein MDM saved to tmp and named by MI_LENS_PROTEIN_MODEL (never the training job's file)."""
    torch.manual_seed(0)
    model = ProteinMDM(ProteinMDMConfig(max_len=32, d_model=16, n_layers=1, n_heads=2, d_ff=32)).eval()
    path = tmp_path / "tiny_protein.safetensors"
    save_protein_mdm(model, path, {"data": {"fasta": "cath-dataset-nonredundant-S40.fa"}})
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", str(path))
    return path


@pytest.fixture
def tiny_default_mdm(tiny_mdm_path, monkeypatch):
    """The tiny protein MDM as the shipped one (the MDM ``auto`` falls back to), with MI_LENS_PROTEIN_MODEL unset:
    a model the variable names is what ``auto`` loads, ESM-C or not."""
    monkeypatch.delenv("MI_LENS_PROTEIN_MODEL")
    monkeypatch.setattr("mi_core.domains.protein.model.DEFAULT_MDM", tiny_mdm_path)
    return tiny_mdm_path


@pytest.fixture
def esmc_pth(tmp_path):
    """A tiny ESM-C with 64-dimensional heads (as the released ones: d_model 128, 2 heads) saved as .pth."""
    model = tiny_esmc(d_model=128, n_heads=2, n_layers=2, seed=1)
    path = tmp_path / "esmc_tiny.pth"
    torch.save(model.state_dict(), path)
    return model, path


def ours(seqs: list[str]) -> torch.Tensor:
    """Our token ids of ``seqs``, right-padded with PAD_ID."""
    n = max(len(s) for s in seqs)
    rows = [np.pad(tokenize(s), (0, n - len(s)), constant_values=PAD_ID) for s in seqs]
    return torch.tensor(np.stack(rows))


@torch.no_grad()
def outputs(model, tokens):
    out = model(tokens)
    return out.logits, out.hidden


# ---- the adapter against the package ----


def test_ids_come_from_the_package_tokenizer(esmc):
    from mi_core.domains.protein.esmc import esm_ids, translation_table

    ids = esm_ids(esmc.tokenizer)
    assert ids["values"] == [4 + ESM_ORDER.index(aa) for aa in AMINO_ACIDS]
    assert (ids["mask"], ids["pad"], ids["bos"], ids["eos"]) == (32, 1, 0, 2)
    table = translation_table(ids)
    assert table[MASK_ID] == 32 and table[PAD_ID] == 1 and table[1] == 5 and table[20] == 19  # A, Y


def test_layout_adds_bos_eos_and_maps_mask_and_padding(adapter):
    esm_tokens, index = adapter.layout(ours(["AC_", "W"]))
    assert esm_tokens.tolist() == [[0, 5, 23, 32, 2], [0, 22, 2, 1, 1]]
    assert index.tolist() == [[1, 2, 3], [1, 3, 4]]  # residues behind BOS; padding on ESM's padding slots


def test_outputs_equal_the_package_forward_on_its_own_tokenization(esmc, adapter):
    tokens = ours(SEQS)
    logits, hidden = outputs(adapter, tokens)
    assert logits.shape == (2, 10, 20) and logits.dtype == torch.float32 and hidden.shape == (2, 10, 64)
    esm_tokens = esmc._tokenize(SEQS)  # the package's tokenizer: BOS, letters ('_' -> <mask>), EOS, <pad>
    with torch.no_grad():
        ref = esmc(sequence_tokens=esm_tokens)
    values = [esmc.tokenizer.convert_tokens_to_ids(aa) for aa in AMINO_ACIDS]
    for b, seq in enumerate(SEQS):
        n = len(seq)
        torch.testing.assert_close(logits[b, :n], ref.sequence_logits[b, 1:n + 1][:, values], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(hidden[b, :n], ref.embeddings[b, 1:n + 1], rtol=1e-5, atol=1e-5)


def test_hidden_drops_bos_and_eos_of_a_single_sequence(esmc, adapter):
    tokens = ours([SEQS[0]])
    _, hidden = outputs(adapter, tokens)
    with torch.no_grad():
        ref = esmc(sequence_tokens=esmc._tokenize([SEQS[0]]))
    assert hidden.shape[1] == len(SEQS[0])
    torch.testing.assert_close(hidden, ref.embeddings[:, 1:-1], rtol=0, atol=0)


def test_padding_does_not_change_real_positions(adapter):
    batch_logits, batch_hidden = outputs(adapter, ours(SEQS))
    for b, seq in enumerate(SEQS):
        alone_logits, alone_hidden = outputs(adapter, ours([seq]))
        torch.testing.assert_close(batch_logits[b, :len(seq)], alone_logits[0], rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(batch_hidden[b, :len(seq)], alone_hidden[0], rtol=1e-5, atol=1e-5)
    # extra padding anywhere in a row packs the residues together: same outputs as without it
    padded = torch.tensor([[PAD_ID, *ours(["GS_LVE"])[0].tolist(), PAD_ID, PAD_ID]])
    logits, _ = outputs(adapter, padded)
    torch.testing.assert_close(logits[0, 1:7], outputs(adapter, ours(["GS_LVE"]))[0][0], rtol=1e-5, atol=1e-5)


def test_adapter_interface_and_bad_tokens(esmc):
    from mi_core.domains.protein.esmc import ESMC_MAX_LEN, ESMCAdapter

    adapter = ESMCAdapter(esmc, max_len=8)
    assert adapter.mask_id == MASK_ID and adapter.value_tokens.tolist() == list(range(1, 21))
    assert ESMCAdapter(esmc).max_len == ESMC_MAX_LEN == 2046
    with pytest.raises(ValueError, match="longer than the 8"):
        adapter(torch.ones(1, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="token ids must be in 0..21"):
        adapter(torch.tensor([[1, 22]]))
    with pytest.raises(ValueError, match=r"shape \(B, N\)"):
        adapter(torch.ones(3, dtype=torch.long))


def test_probe_runs_on_esmc(adapter):
    tokens = torch.tensor(tokenize("MK_LV_A"))
    result = probe(adapter, tokens)
    assert result.passes == 1 + 2 * 20 and result.mi.shape == (7, 7)
    assert float(result.mi[2, 5]) > 0 and torch.equal(result.mi, result.mi.T)


# ---- weights: loading and finding ----


def test_load_esmc_roundtrip(esmc, adapter, tmp_path):
    from mi_core.domains.protein.esmc import load_esmc

    path = tmp_path / "esmc_64.pth"
    torch.save(esmc.state_dict(), path)
    loaded = load_esmc(path, n_heads=4)  # d_model 64 is not a released size: the head count must be given
    tokens = ours(SEQS)
    for a, b in zip(outputs(loaded, tokens), outputs(adapter, tokens)):
        assert torch.equal(a, b)
    assert not loaded.training and "d_model 64, 2 layers" in loaded.name


def test_released_sizes_and_default_heads():
    from mi_core.domains.protein.esmc import esmc_dims

    def state(d, layers):
        return {"embed.weight": torch.zeros(64, d), **{f"transformer.blocks.{i}.attn.out_proj.weight": 0 for i in range(layers)}}

    assert esmc_dims(state(960, 30)) == (960, 15, 30)
    assert esmc_dims(state(1152, 36)) == (1152, 18, 36)
    assert esmc_dims(state(128, 2)) == (128, 2, 2)
    assert esmc_dims(state(64, 2), n_heads=4) == (64, 4, 2)


def test_weights_found_by_path_env_and_hf_cache(esmc_pth, tmp_path, monkeypatch, no_weights):
    from mi_core.domains.protein.esmc import find_esmc_weights, load_esmc

    model, path = esmc_pth
    tokens = ours(SEQS)
    with torch.no_grad():
        expected = model(sequence_tokens=model._tokenize(SEQS)).sequence_logits
    assert find_esmc_weights() is None
    # (a) a directory laid out as the Hugging Face repo
    repo_dir = tmp_path / "repo"
    (repo_dir / "data" / "weights").mkdir(parents=True)
    (repo_dir / "data" / "weights" / "esmc_300m_2024_12_v0.pth").write_bytes(path.read_bytes())
    assert find_esmc_weights(repo_dir) == repo_dir / "data" / "weights" / "esmc_300m_2024_12_v0.pth"
    # (b) the environment variable
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(path))
    assert find_esmc_weights() == path
    monkeypatch.delenv("MI_LENS_ESMC_WEIGHTS")
    # (c) the hub cache, snapshot named by refs/main
    root = no_weights / "models--EvolutionaryScale--esmc-600m-2024-12"
    snap = root / "snapshots" / "abc123" / "data" / "weights"
    snap.mkdir(parents=True)
    (snap / "esmc_600m_2024_12_v0.pth").write_bytes(path.read_bytes())
    (root / "refs").mkdir()
    (root / "refs" / "main").write_text("abc123")
    found = find_esmc_weights()
    assert found == snap / "esmc_600m_2024_12_v0.pth"
    logits, _ = outputs(load_esmc(found), tokens)
    values = [model.tokenizer.convert_tokens_to_ids(aa) for aa in AMINO_ACIDS]
    torch.testing.assert_close(logits[0], expected[0, 1:11][:, values], rtol=1e-5, atol=1e-5)


def test_hf_home_is_the_cache_parent(monkeypatch, tmp_path):
    from mi_core.domains.protein.esmc import hf_hub_cache

    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    assert hf_hub_cache() == tmp_path / "hub"


def test_resolver_loads_esmc_identically_from_each_place(esmc_pth, tmp_path, monkeypatch, no_weights):
    _, path = esmc_pth
    tokens = ours(SEQS)
    by_path, info = load_protein_model(str(path))
    assert info.kind == "esmc" and info.path == path and info.fallback_reason is None
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(path))
    by_env, info_env = load_protein_model("auto")
    by_name, _ = load_protein_model("esmc")
    monkeypatch.delenv("MI_LENS_ESMC_WEIGHTS")
    snap = no_weights / "models--EvolutionaryScale--esmc-300m-2024-12" / "snapshots" / "r1" / "data" / "weights"
    snap.mkdir(parents=True)
    (snap / "esmc_300m_2024_12_v0.pth").write_bytes(path.read_bytes())
    by_cache, info_cache = load_protein_model("auto")
    assert info_env.kind == info_cache.kind == "esmc" and info_cache.path.parent == snap
    reference = outputs(by_path, tokens)
    for loaded in (by_env, by_name, by_cache):
        for a, b in zip(outputs(loaded, tokens), reference):
            assert torch.equal(a, b)


def test_bad_weight_files(tmp_path, esmc):
    from mi_core.domains.protein.esmc import load_esmc

    with pytest.raises(ModelFileError, match="ESM-C weights not found"):
        load_esmc(tmp_path / "nope.pth")
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(b"this is not a checkpoint" * 10)
    with pytest.raises(ModelFileError, match=r"is not an ESM-C state dict \(torch.load: "):
        load_esmc(garbage)
    listed = tmp_path / "list.pth"
    torch.save([torch.zeros(2)], listed)
    with pytest.raises(ModelFileError, match="holds a list"):
        load_esmc(listed)
    other = tmp_path / "other.pth"
    torch.save({"weight": torch.zeros(2)}, other)
    with pytest.raises(ModelFileError, match="not an ESM-C state dict"):
        load_esmc(other)
    broken = tmp_path / "broken.pth"
    state = esmc.state_dict()
    state.pop("sequence_head.3.bias")
    torch.save(state, broken)
    with pytest.raises(ModelFileError, match="does not fit an ESM-C with d_model 64"):
        load_esmc(broken, n_heads=4)


# ---- the resolver's fallbacks (no esm needed) ----


def test_auto_falls_back_to_the_mdm_with_a_reason(no_weights, tiny_default_mdm):
    model, info = load_protein_model("auto")
    assert isinstance(model, ProteinMDM) and info.kind == "mdm" and info.path == tiny_default_mdm
    assert "no ESM-C weights found in MI_LENS_ESMC_WEIGHTS (unset)" in info.fallback_reason
    assert str(no_weights) in info.fallback_reason
    assert "using the protein MDM trained on CATH S40" in info.fallback_reason


@pytest.mark.parametrize("value, match", [
    ("{tmp}/missing.pth", "ESM-C weights not found: .*missing.pth"),
    ("{tmp}", "no esmc_.*pth in"),
    ("esmc", "no ESM-C weights found"),
    ("mdn", "unknown protein model 'mdn'"),
])
def test_auto_takes_the_model_variable_and_names_it_when_it_fails(no_weights, monkeypatch, tmp_path, capsys, value,
                                                                   match):
    """MI_LENS_PROTEIN_MODEL naming ESM-C, an ESM-C file or a typo is what auto loads, as in the app: it was
    ignored by the command line, which probed with the shipped MDM."""
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", value.format(tmp=tmp_path))
    with pytest.raises(ModelFileError, match=f"{match}.*the value of MI_LENS_PROTEIN_MODEL"):
        load_protein_model("auto")
    assert main(["probe", "protein", "--sequence", "MKT_AYIAK", "--device", "cpu", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "MI_LENS_PROTEIN_MODEL" in err[0]


def test_auto_takes_the_mdm_file_the_variable_names_even_beside_esmc(esmc_pth, tiny_mdm_path, monkeypatch):
    """MI_LENS_PROTEIN_MODEL naming a .safetensors MDM is that model in the app; the command line's auto took ESM-C
    whenever its weights were found, and the file only when they were not."""
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(esmc_pth))
    model, info = load_protein_model("auto")
    assert isinstance(model, ProteinMDM) and info.path == tiny_mdm_path and info.fallback_reason is None


def test_auto_takes_mdm_from_the_model_variable_as_the_app_does(esmc_pth, no_weights, monkeypatch):
    """MI_LENS_PROTEIN_MODEL=mdm (README: auto, esmc, mdm or a path) is the MDM in the app; the command line's
    auto took ESM-C instead whenever its weights were found."""
    from mi_core.models.loading import load_model_described

    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(esmc_pth[1]))
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", "mdm")
    model, info = load_protein_model("auto")
    assert isinstance(model, ProteinMDM) and info.kind == "mdm" and info.fallback_reason is None
    assert load_model_described("auto", "cpu", "protein")[1] == load_model_described(None, "cpu", "protein")[1]
    monkeypatch.setenv("MI_LENS_PROTEIN_MODEL", "auto")  # auto itself still prefers ESM-C
    assert load_protein_model("auto")[1].kind == "esmc"


def test_auto_reports_a_bad_env_path(no_weights, tiny_default_mdm, monkeypatch, tmp_path):
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(tmp_path / "missing.pth"))
    _, info = load_protein_model("auto")
    assert info.kind == "mdm" and "MI_LENS_ESMC_WEIGHTS" in info.fallback_reason and "missing.pth" in info.fallback_reason


def test_esmc_without_weights_says_where_it_looked(no_weights):
    with pytest.raises(ModelFileError, match="no ESM-C weights found in MI_LENS_ESMC_WEIGHTS") as err:
        load_protein_model("esmc")
    assert str(no_weights) in str(err.value) and "set MI_LENS_ESMC_WEIGHTS" in str(err.value)


def test_mdm_specs_and_bad_specs(no_weights, tiny_mdm_path, tmp_path):
    for spec in ("mdm", str(tiny_mdm_path)):
        model, info = load_protein_model(spec)
        assert isinstance(model, ProteinMDM) and info.kind == "mdm" and info.fallback_reason is None and "16-dim, 1 layers" in info.description
    with pytest.raises(ValueError, match="unknown protein model 'nope.txt'"):
        load_protein_model("nope.txt")
    with pytest.raises(ModelFileError, match="protein MDM not found"):
        load_protein_model(str(tmp_path / "absent.safetensors"))


def test_weights_without_the_esm_package(no_weights, tiny_default_mdm, monkeypatch, tmp_path, capsys):
    fake = tmp_path / "esmc_fake.pth"
    torch.save({"embed.weight": torch.zeros(64, 128), "transformer.blocks.0.attn.out_proj.weight": torch.zeros(128, 128)}, fake)
    monkeypatch.setenv("MI_LENS_ESMC_WEIGHTS", str(fake))
    monkeypatch.setitem(sys.modules, "esm.models.esmc", None)  # makes `import esm.models.esmc` fail
    _, info = load_protein_model("auto")
    assert info.kind == "mdm" and "pip install -r requirements-esm.txt" in info.fallback_reason
    assert main(["probe", "protein", "--sequence", "MK_T", "--model", "esmc", "--no-progress"]) == 2
    assert "error: ESM-C needs the esm package" in capsys.readouterr().err


# ---- python -m mi_core probe protein ----


def test_probe_protein_cli_with_esmc(esmc_pth, tmp_path, no_weights, capsys):
    _, path = esmc_pth
    out = tmp_path / "p.json"
    rc = main(["probe", "protein", "--sequence", "MK_LVXA", "--model", str(path), "--json", str(out),
               "--device", "cpu", "--no-progress"])
    assert rc == 0
    res = json.loads(out.read_text())
    assert res["model"]["kind"] == "esmc" and res["sequence"] == "MK_LV_A" and res["masked_residues"] == [3, 6]
    assert np.array(res["mi"]).shape == (7, 7) and res["passes"] == 41
    from mi_core.domains.protein.esmc import load_esmc

    direct = probe(load_esmc(path), torch.tensor(tokenize("MK_LV_A")))
    np.testing.assert_allclose(res["mi"], direct.mi.numpy(), rtol=1e-9, atol=1e-12)
    assert "largest MI" in capsys.readouterr().out


def test_probe_protein_cli_masks_positions_and_rate(tiny_default_mdm, no_weights, tmp_path, capsys):
    fasta = tmp_path / "two.fa"
    fasta.write_text(">first\nMKTAYIAKQRQISFVKSHFSRQ\n>second\nGSHMLEDPVAGKTWLA\n")
    out = tmp_path / "m.json"
    args = ["probe", "protein", "--fasta", str(fasta), "--record", "2", "--mask-positions", "2,5-7",
            "--json", str(out), "--no-progress", "--device", "cpu"]
    assert main(args) == 0
    res = json.loads(out.read_text())
    assert res["record"] == "second" and res["masked_residues"] == [2, 5, 6, 7] and res["model"]["kind"] == "mdm"
    # the residues masked are kept, as antibody's JSON keeps them (the JSON held only the masked sequence)
    assert res["sequence"] == "G_HM___PVAGKTWLA" and res["native"] == "GSHMLEDPVAGKTWLA"
    assert "no ESM-C weights found" in res["model"]["fallback_reason"]
    assert "note: no ESM-C weights found" in capsys.readouterr().err
    masked = []
    for seed in (3, 3, 4):
        assert main([*args[:6], "--mask-rate", "0.5", "--seed", str(seed), "--json", str(out), "--no-progress", "--force"]) == 0
        masked.append(json.loads(out.read_text())["masked_residues"])
    assert masked[0] == masked[1] and len(masked[0]) == 8 and masked[0] != masked[2]


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--sequence", "MKTAYI", "--mask-positions", "0"], "outside 1-6 (the sequence has 6 residues)"),
        (["--sequence", "MKTAYI", "--mask-positions", "5-3"], "the range '5-3' runs backwards"),
        (["--sequence", "MKTAYI", "--mask-positions", "2-"], "is not a residue number or range"),
        (["--sequence", "MKTAYI", "--mask-positions", "a"], "is not a residue number or range"),
        (["--sequence", "MKTAYI", "--mask-rate", "1.5"], "--mask-rate: 1.5 is outside the accepted range 0..1"),
        (["--sequence", "MKTAYI"], "nothing to probe: no masked residues"),
        (["--sequence", "MK1AYI"], "not amino-acid letters: '1' at 3"),
        (["--sequence", "MK_AYI", "--record", "2"], "--record selects a FASTA record"),
        (["--sequence", "MK_AYI", "--model", "weights.bin"], "unknown protein model 'weights.bin'"),
        (["--sequence", "M_" * 20], "sequence: 40 residues, longer than the 32 the mdm model takes"),
    ],
)
def test_probe_protein_bad_input_is_one_clear_line(tiny_mdm_path, no_weights, capsys, extra, message):
    rc = main(["probe", "protein", *extra, "--no-progress", "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and "Traceback" not in err


def test_probe_protein_record_past_the_end(tiny_mdm_path, no_weights, tmp_path, capsys):
    fasta = tmp_path / "one.fa"
    fasta.write_text(">only\nMK_AYI\n")
    assert main(["probe", "protein", "--fasta", str(fasta), "--record", "3", "--no-progress"]) == 2
    assert "has 1 record(s); --record 3 asks for more" in capsys.readouterr().err


def test_probe_protein_record_is_read_whatever_the_records_before_it_hold(tiny_mdm_path, no_weights, tmp_path, capsys):
    """--record 2 of a FASTA whose first record has a gap (or a U, an inner stop codon) was refused with the first
    record's error: the asked-for record is read; a bad one, or one past the end, is still named."""
    fasta = tmp_path / "mixed.fa"
    fasta.write_text(">bad\nMK-TAYIAKQR\n>good\nMK_AYI\n>bad2\nMKU\n")
    assert main(["probe", "protein", "--fasta", str(fasta), "--record", "2", "--no-progress"]) == 0
    assert "good: 6 residues" in capsys.readouterr().out
    for record, message in (("3", "mixed.fa: bad2: not amino-acid letters: 'U' at 3"),
                            ("1", "mixed.fa: bad: not amino-acid letters: '-' at 3"),
                            ("4", "has 3 record(s); --record 4 asks for more")):
        assert main(["probe", "protein", "--fasta", str(fasta), "--record", record, "--no-progress"]) == 2
        assert message in capsys.readouterr().err


def test_estimate_names_no_model_auto_in_its_length_line(no_weights, tmp_path, monkeypatch, capsys):
    """estimate protein, run outside the repository, on a sequence longer than the shipped MDM takes said "longer
    than the 256 the model auto takes": 'auto' is the choice of model, not its name."""
    monkeypatch.chdir(tmp_path)
    rc = main(["estimate", "protein", "--sequence", "A" * 300 + "_", "--device", "cpu"])
    err = capsys.readouterr().err
    assert rc == 2 and "301 residues, longer than the 256 the model takes" in err and "auto" not in err, err
