"""The antibody commands on a user's own small files and near-miss inputs: each step's errors name the option
and the file that is wrong, before the model loads."""

from __future__ import annotations

import json

import pytest

from mi_core import cli
from tests.test_antibody_domain import DEV_CSV, SEQUENCES, tiny_folder  # noqa: F401 (a fixture)


def write_csv(path, rows, header="name,vh,vl"):
    path.write_text(header + "\n" + "".join(",".join(row) + "\n" for row in rows))
    return path


def test_eval_model_names_composition_rows_when_they_outrun_the_file(tmp_path, capsys, monkeypatch):
    """A file of 3 antibodies with ``--rows all`` was told "--rows 1-70: the file holds 3 antibodies", naming an
    option the user gave right: it is ``--composition-rows`` (default 1-70) that outruns the file; and the files
    are read before the model loads."""
    import mi_core.domains.antibody.evaluate as evaluate

    monkeypatch.setattr(evaluate, "load_model_described", lambda *a, **k: (_ for _ in ()).throw(AssertionError("loaded")))
    data = write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])
    assert cli.main(["eval-model", "antibody", "--csv", str(data), "--rows", "all"]) == 2
    err = capsys.readouterr().err
    assert "error: --composition-rows 1-70: the file holds 3 antibodies" in err, err
    assert cli.main(["eval-model", "antibody", "--csv", str(tmp_path / "absent.csv")]) == 2
    assert "absent.csv" in capsys.readouterr().err


def test_ones_own_file_is_used_whole_under_the_default_rows(tmp_path, capsys, tiny_folder):  # noqa: F811
    """bench antibody --csv mine.fa (3 antibodies) was refused with "--rows 71-100: the file holds 3 antibodies", a
    --rows the user never gave (the shipped set's held-out rows); eval-model the same. Another --csv is now used whole
    unless --rows is given, and eval-model's composition baseline is then the shipped set's."""
    fasta = tmp_path / "mine.fa"
    fasta.write_text("".join(f">{n}\n{h}\n" for n, (h, _) in SEQUENCES.items()))
    out, model = tmp_path / "b.json", ["--model", str(tiny_folder)]
    assert cli.main(["bench", "antibody", "--csv", str(fasta), "--sampler", "topk", "--set", "k=4", *model,
                     "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["rows"] == "all" and res["n"] == 3
    assert cli.main(["bench", "antibody", "--csv", str(fasta), "--rows", "71-100", *model, "--json", str(out),
                     "--force"]) == 2
    assert "error: --rows 71-100: the file holds 3 antibodies (give --rows all, or A-B within 1-3)" in capsys.readouterr().err
    if not DEV_CSV.is_file():
        pytest.skip(f"the shipped antibodies are not at {DEV_CSV}")
    data = write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])
    out = tmp_path / "e.json"
    assert cli.main(["eval-model", "antibody", "--csv", str(data), "--draws", "1", *model, "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    assert res["rows"] == "all" and res["n_chains"] == 6 and res["composition_csv"].endswith("antibodies_jain2017_dev.csv")


def test_a_light_chain_under_vh_is_refused_as_swapped_columns(tmp_path):
    """A file whose vh and vl columns are swapped was read without a word: its light chains named ``NAME VH`` in
    every result (and counted as heavy rows by --rows' antibody names); now one line asks whether the columns are
    swapped. A VHH under vh, and either chain under ``sequence``, still read."""
    import pytest

    from mi_core.domains.antibody.sequence import AntibodyInputError, read_file

    heavy, light = SEQUENCES["trastuzumab"]
    swapped = write_csv(tmp_path / "swapped.csv", [("mine", light, heavy)])
    with pytest.raises(AntibodyInputError, match=r"swapped\.csv: mine VH: the 'vh' column holds a light \(VL\) chain"
                                                 r".*vh and vl columns swapped"):
        read_file(swapped)
    upper = write_csv(tmp_path / "upper.csv", [("mine", heavy, heavy)], header="Name,VH,VL")
    with pytest.raises(AntibodyInputError, match="mine VL: the 'VL' column holds a heavy"):
        read_file(upper)
    either = write_csv(tmp_path / "either.csv", [("a", light), ("b", heavy)], header="name,sequence")
    assert [(c.name, c.chain) for c in read_file(either)] == [("a", "L"), ("b", "H")]
    mine = write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])
    assert [c.chain for c in read_file(mine)] == ["H", "L"] * 3


def test_swapped_columns_are_one_error_line_of_the_command(tmp_path, capsys):
    heavy, light = SEQUENCES["rituximab"]
    swapped = write_csv(tmp_path / "swapped.csv", [("mine", light, heavy)])
    assert cli.main(["bench", "antibody", "--csv", str(swapped), "--rows", "all"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "columns swapped" in err, err


def test_bench_order_runs_without_a_selector_with_ones_own_estimator(tiny_folder, tmp_path, capsys):  # noqa: F811
    """``bench-order antibody`` stopped at "ships no order selector: give --selector FILE" (train-order takes no
    antibody, so no selector can be made), took no --estimator (its mi rows read the shipped one) and headed its
    table "accuracy" over empty cells (the in-filling metric scores "recovery"). Now the learned rows are
    skipped with a note, the mi rows read --estimator, and the table shows recovery."""
    import json

    data = write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])
    shards, estimator = tmp_path / "shards", tmp_path / "est.safetensors"
    assert cli.main(["make-estimator-data", "antibody", "--model", str(tiny_folder), "--out", str(shards), "--csv",
                     str(data), "--rows", "1-2", "--states", "2", "--shard-size", "2", "--max-masked", "3"]) == 0
    assert cli.main(["train-estimator", "--data", str(shards), "--out", str(estimator), "--steps", "2",
                     "--eval-every", "2", "--variants", "log:free", "--batch", "2", "--d-node", "16"]) == 0
    capsys.readouterr()
    out = tmp_path / "order.json"
    argv = ["bench-order", "antibody", "--csv", str(data), "--rows", "3-3", "--model", str(tiny_folder),
            "--budgets", "2", "--gammas", "1", "--json", str(out)]
    assert cli.main([*argv, "--estimator", str(estimator)]) == 0
    assert "ships no order selector: the learned rows are skipped" in capsys.readouterr().err
    rows = json.loads(out.read_text())
    assert [r["sampler"] for r in rows] == ["random", "top_prob", "top_margin", "eb", "mi", "sequential"]
    assert rows[4]["estimator"] == str(estimator) and all(0 <= r["recovery"] <= 1 and r["n"] == 2 for r in rows)
    table = out.with_suffix(".md").read_text()
    assert "| recovery ± SE |" in table and f"| {rows[0]['recovery']:.3f} ± {rows[0]['recovery_se']:.3f} |" in table, table
    shipped = "assets/antibody_mi_estimator.safetensors"  # trained on the real AntiBERTy: refused before a row
    assert cli.main([*argv, "--estimator", shipped, "--force"]) == 2
    assert "error: " in capsys.readouterr().err


def test_two_domains_in_tandem_are_named_as_such():
    """A bivalent VHH (as caplacizumab is), or two VL in a row, was refused as "not an antibody variable domain:
    CDR-H3 would be 150 residues ... for other proteins use the protein domain": the second domain was read as
    CDR3. Now the two framework-4 motifs are named and one domain asked for; each domain alone still reads."""
    import pytest

    from mi_core.domains.antibody.sequence import AntibodyInputError, read_chain

    vhh = ("EVQLVESGGGLVQPGGSLRLSCAASGRTFSYNPMGWFRQAPGKGRELVAAISRTGGSTYYPDSVEGRFTISRDNAKRMVYLQMNSLRAEDTAVYYCAAAGVRAE"
           "DGRVRTLPSEYTFWGQGTQVTVSS")
    light = SEQUENCES["trastuzumab"][1]
    with pytest.raises(AntibodyInputError, match=r"^dimer: more than one variable domain \(framework 4's W-G-x-G at "
                                                 r"118 and again at 249\): give one VH or VL alone"):
        read_chain(vhh + "AAA" + vhh, "dimer")
    with pytest.raises(AntibodyInputError, match=r"F-G-x-G at 98 and again at 220\)"):
        read_chain(light + "GGGGS" * 3 + light, "two VL")
    assert read_chain(vhh).regions["CDR3"] == (98, 117) and read_chain(light).chain == "L"


def test_a_spreadsheets_byte_order_mark_hides_no_column(tmp_path):
    """A CSV saved as "CSV UTF-8" starts with a byte-order mark, which became part of the first column's name: with
    vh first, every heavy chain was silently dropped (only the VL read); with name first, the chains were named
    ``row 2 VH``. A FASTA file with one was "not a FASTA file (no '>' header)"."""
    from mi_core.domains.antibody.sequence import read_file
    from mi_core.domains.protein import read_fasta

    heavy, light = SEQUENCES["trastuzumab"]
    vh_first = tmp_path / "vh_first.csv"
    vh_first.write_bytes(f"\ufeffvh,vl,name\r\n{heavy},{light},mine\r\n".encode())
    assert [(c.name, c.chain) for c in read_file(vh_first)] == [("mine VH", "H"), ("mine VL", "L")]
    name_first = tmp_path / "name_first.csv"
    name_first.write_bytes(f"\ufeffname,vh,vl\n{'mine'},{heavy},{light}\n".encode())
    assert [c.name for c in read_file(name_first)] == ["mine VH", "mine VL"]
    fasta = tmp_path / "mine.fasta"
    fasta.write_bytes(f"\ufeff>mine VH\n{heavy}\n".encode())
    assert [c.name for c in read_file(fasta)] == ["mine VH"] and [r.name for r in read_fasta(fasta)] == ["mine VH"]


def test_a_cdr_is_read_as_the_app_and_papers_spell_it(capsys):
    """The app names its bands CDR-H1..CDR-L3, papers write HCDR3 or CDRH3: --mask-positions CDR-H3 was "unknown
    region 'CDR-H3'; choose one of cdr1, cdr2, cdr3, cdrs, fr1..fr4 or all" (h1..l3, which it takes, unnamed)."""
    import pytest

    from mi_core.domain import get_domain
    from mi_core.domains.antibody.sequence import read_chain

    domain = get_domain("antibody")
    heavy, light = (read_chain(s).tokens for s in SEQUENCES["trastuzumab"])
    cdr3 = domain.named_positions(heavy, "cdr3")
    for spec in ("CDR-H3", "cdrh3", "HCDR3", "h3", "cdr 3"):
        assert domain.named_positions(heavy, spec) == cdr3, spec
    assert domain.named_positions(light, "CDR-L1, LCDR2") == domain.named_positions(light, "cdr1,cdr2")
    with pytest.raises(ValueError, match="CDR-L3 is a CDR of a light"):
        domain.named_positions(heavy, "CDR-L3")
    with pytest.raises(ValueError, match=r"unknown region 'cdr4'; choose one of .*h1\.\.h3, l1\.\.l3 or all"):
        domain.named_positions(heavy, "cdr4")


def test_bench_order_runs_eb_and_mi_at_the_domains_budgets_by_default(tiny_folder, tmp_path, capsys):  # noqa: F811
    """--gammas says "(default: the domain's)", yet without it bench-order antibody ran no eb or mi row at all:
    now eb at the domain's 4 and mi at its 8 (the app's and the CDR benchmark's settings); mi needs an estimator
    trained on this model, and says so."""
    import json

    data = write_csv(tmp_path / "mine.csv", [(n, h, v) for n, (h, v) in SEQUENCES.items()])
    out = tmp_path / "order.json"
    assert cli.main(["bench-order", "antibody", "--csv", str(data), "--rows", "1-1", "--model", str(tiny_folder),
                     "--budgets", "2", "--json", str(out)]) == 0
    assert "no MI estimator" in capsys.readouterr().err  # the shipped one was trained on the real AntiBERTy
    rows = json.loads(out.read_text())
    assert [(r["sampler"], r["params"]) for r in rows[3:]] == [("eb", {"gamma": 4.0}), ("sequential", {})]


def test_a_signal_peptide_before_the_domain_is_named_with_where_the_domain_starts():
    """A VH or VL copied with its signal peptide (or a His tag) was "not an antibody variable domain ... for other
    proteins use the protein domain"; the message now says which residues come first and where the domain
    starts. A protein that holds no variable domain keeps the pointer to the protein domain."""
    import pytest

    from mi_core.domains.antibody.sequence import AntibodyInputError, read_chain

    heavy, light = SEQUENCES["trastuzumab"]
    cases = [("MGWSCIILFLVATATGVHS" + heavy, 19), ("MDMRVPAQLLGLLLLWLRGARC" + light, 22),  # the kappa leader ends in C
             ("MHHHHHHSSGVDLGTENLYFQS" + heavy, 22)]
    for text, lead in cases:
        with pytest.raises(AntibodyInputError, match=rf"; residues 1-{lead} come before a variable domain \(a "
                                                     rf"signal peptide or a tag\?\): give it from residue {lead + 1}$"):
            read_chain(text)
        assert read_chain(text[lead:]).length == len(text) - lead
    with pytest.raises(AntibodyInputError, match="for other proteins use the protein domain$"):
        read_chain(heavy[:21] + "S" + heavy[22:])


def test_a_report_cell_without_a_value_reads_as_a_dash():
    """bench-order's table printed "None" in the T column of its eb, mi and sequential rows."""
    from mi_core.bench.report import markdown_table

    rows = [{"sampler": "random", "T": 2, "recovery": 0.5}, {"sampler": "eb", "T": None, "recovery": 0.25}]
    table = markdown_table(rows, [("sampler", "sampler"), ("T", "T"), ("recovery", "recovery")])
    assert table.splitlines()[2:] == ["| random | 2 | 0.500 |", "| eb | - | 0.250 |"]


def test_an_aligned_sequence_is_told_to_drop_its_gaps(capsys):
    """IMGT's gapped sequences write '.' for the numbering's gaps, alignments '-': the error listed the gaps as
    "not amino-acid letters" and said no more; it now says they are gaps to remove (other letters: as before)."""
    import pytest

    from mi_core.domains.antibody.sequence import AntibodyInputError, read_chain

    heavy = SEQUENCES["trastuzumab"][0]
    imgt = heavy[:9] + "." + heavy[9:26] + "...." + heavy[26:]
    with pytest.raises(AntibodyInputError, match=r"'\.' at 10, '\.' at 28.* \(alignment gaps: remove them to give "
                                                 r"the residues alone; _ or X marks a masked residue\)$"):
        read_chain(imgt)
    assert cli.main(["probe", "antibody", "--sequence", heavy[:30] + "--" + heavy[30:], "--mask-positions", "cdr3"]) == 2
    assert "'-' at 31, '-' at 32 (alignment gaps: remove them" in capsys.readouterr().err
    with pytest.raises(AntibodyInputError, match=r"'1' at 5, '-' at 6$"):
        read_chain(heavy[:4] + "1-" + heavy[4:])
    assert read_chain(imgt.replace(".", "")).regions == read_chain(heavy).regions


@pytest.mark.parametrize("sep, name", [("\t", "tabs"), (";", "semicolons")])
def test_a_csv_separated_otherwise_is_told_so(tmp_path, sep, name):
    """A .csv a spreadsheet wrote with tabs or semicolons was "no vh, vl or sequence column in the header
    ['name\\tvh\\tvl']": true, but with no word of why."""
    from mi_core.domains.antibody.sequence import AntibodyInputError, read_file

    heavy, light = SEQUENCES["trastuzumab"]
    path = tmp_path / "mine.csv"
    path.write_text(sep.join(["name", "vh", "vl"]) + "\n" + sep.join(["mine", heavy, light]) + "\n")
    with pytest.raises(AntibodyInputError, match=f"separated by {name}: save it comma-separated"):
        read_file(path)
