"""The app's downloads (``mi_lens_app.exports``): CSV that Excel reads, and traces in each domain's own words."""

import csv
import dataclasses
import json

import numpy as np
import pandas as pd
import pytest
import torch
from toy_domain import TOY, AllDifferentModel

from mi_core.domains.oracle4 import Oracle4Model
from mi_core.domains.protein import AMINO_ACIDS, ProteinRecord, tokenize
from mi_core.domains.protein.mdm import ProteinMDM, ProteinMDMConfig
from mi_lens_app import exports, traces
from mi_lens_app.domains import DOMAINS, make_puzzle
from mi_lens_app.sequences import Masking, protein_puzzle

SEQ = "MKTAYIAKQRQISFVKSHFSRQLEERLGLIEVQAPILSRVGDGTQDNLSGAEKAVQ"


def keys(data) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(data, dict):
        return set(data) | {k for v in data.values() for k in keys(v)}
    return {k for v in data for k in keys(v)} if isinstance(data, list) else set()


def test_mi_csv_starts_with_a_byte_order_mark_and_its_labels_read_back(tmp_path):
    """Excel on Windows read the CSV, which had no byte-order mark, in the local code page: an antibody's CDR label
    ``W99·H3`` came out as ``W99Â·H3``. The file now starts with the UTF-8 mark, and csv and pandas read it back."""
    labels = ["W99·H3", "_100·H3", "É3"]
    data = exports.mi_csv(np.full((3, 3), 0.25), labels, np.array([False, True, True]))
    assert data.startswith(b"\xef\xbb\xbf")
    path = tmp_path / "mi.csv"
    path.write_bytes(data)
    with open(path, encoding="utf-8-sig", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["cell", "masked", *labels] and [r[0] for r in rows[1:]] == labels
    assert list(pd.read_csv(path, encoding="utf-8-sig").columns) == ["cell", "masked", *labels]


def test_a_proteins_mi_csv_heads_its_labels_residue():
    data = exports.mi_csv(np.zeros((2, 2)), ["M1", "_2"], np.array([False, True]), DOMAINS["protein"].nouns[0])
    assert data.decode("utf-8-sig").splitlines()[0] == "residue,masked,M1,_2"


@pytest.fixture(scope="module")
def protein_trace():
    """A protein with residues 3-5 masked, decoded two at a time by a tiny random MDM: ``(puzzle, trace JSON)``."""
    domain = DOMAINS["protein"]
    torch.manual_seed(0)
    model = ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()
    pz = protein_puzzle(domain, ProteinRecord("p", np.asarray(tokenize(SEQ))), Masking("positions", "3-5"))
    trace = traces.decode_trace(model, None, domain, pz.text, pz.solution_text, "topk", {"k": 2})
    return pz, json.loads(exports.trace_json(trace, pz.text, "protein", pz.labels(), 0.0, 0,
                                             known=exports.known_state(domain, pz)))


def test_a_protein_trace_names_residues_and_amino_acids_not_digits(protein_trace):
    """A protein's trace wrote each residue it filled as a "digit" (the token id, 16 for S), in a "cell"."""
    pz, data = protein_trace
    assert not keys(data) & {"digit", "cell", "grid"}
    first = data["steps"][1]["unmasked"][0]
    assert set(first) == {"residue", "index", "amino_acid", "entropy", "confidence"}
    assert first["residue"] == pz.labels()[first["index"]] and first["amino_acid"] in AMINO_ACIDS


def test_a_protein_trace_is_scored_against_its_native_sequence_not_solved(protein_trace):
    """A protein is not "solved", and a residue that differs from the native one is no error (many fold alike)."""
    pz, data = protein_trace
    assert not keys(data) & {"solved", "errors"}
    assert data["matches_native"] is False and data["native"] == SEQ  # a random model: some residue differs
    last = data["steps"][-1]
    wrong = [pz.labels()[i] for i in range(len(SEQ)) if last["sequence"][i] != SEQ[i]]
    assert last["differs_from_native"] == wrong and wrong


def test_a_protein_trace_writes_masked_residues_as_its_puzzle_does(protein_trace):
    """The steps wrote a masked residue "." while the same file's puzzle wrote it "_"."""
    pz, data = protein_trace
    assert data["steps"][0]["sequence"] == data["puzzle"] == pz.text and pz.text[2:5] == "___"
    assert "_" not in data["steps"][-1]["sequence"]


def test_a_sudoku_trace_keeps_its_cells_digits_and_solved():
    """Sudoku's words stay: a grid, its cells and digits, solved and errors."""
    s4 = DOMAINS["sudoku4"]
    trace = traces.decode_trace(Oracle4Model(), None, s4, "." * 16, None, "sequential", {})
    data = json.loads(exports.trace_json(trace, "." * 16, "oracle4", s4.labels(), 0.0, 0))
    assert data["solved"] is True and data["steps"][0]["grid"] == "." * 16
    entry, final = data["steps"][1]["unmasked"][0], data["steps"][-1]
    assert set(entry) == {"cell", "index", "digit", "entropy", "confidence"}
    assert entry["digit"] == final["grid"][entry["index"]] and final["errors"] == []


@pytest.fixture
def marked():
    """A toy domain that writes a masked position "?" and has "_" among its values."""
    from mi_core.domain import register, unregister

    domain = register(dataclasses.replace(TOY, key="toyq", names=("toyq",), short="toyq", mask_char="?",
                                          alphabet=tuple("abcde_")))
    yield domain
    unregister(domain.key)


def test_a_masked_position_is_named_with_its_domains_mask_symbol(marked):
    """A masked position was named with the protein's "_" in every sequence domain: here "_3" read as the value
    "_" at position 3, and a given "_" and a masked position had the same kind of name."""
    pz = make_puzzle(DOMAINS["toyq"], "ab??e_")
    assert pz.labels() == ["a1", "b2", "?3", "?4", "e5", "_6"]
    trace = traces.decode_trace(AllDifferentModel(), None, marked, pz.text, None, "topk", {"k": 1})
    data = json.loads(exports.trace_json(trace, pz.text, "toyq", pz.labels(), 0.0, 0))
    assert data["steps"][0]["sequence"] == "ab??e_" and "?" not in data["steps"][-1]["sequence"]
    assert {u["position"] for s in data["steps"] for u in s["unmasked"]} == {"?3", "?4"}
    assert all(u["symbol"] in "cd" for s in data["steps"] for u in s["unmasked"])


def test_a_protein_trace_with_no_native_does_not_say_it_matches_one():
    """Decoded from a sequence whose native is not known, a trace said ``"matches_native": true`` (the decode was only
    whole) and counted its errors, the domain's rule conflicts, as ``differs_from_native``."""
    domain = DOMAINS["protein"]
    torch.manual_seed(0)
    model = ProteinMDM(ProteinMDMConfig(max_len=64, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()
    puzzle = "MKT___KQRQ"
    trace = traces.decode_trace(model, None, domain, puzzle, None, "topk", {"k": 2})
    labels = [f"{c}{i + 1}" for i, c in enumerate(puzzle)]
    data = json.loads(exports.trace_json(trace, puzzle, "protein", labels, 0.0, 0,
                                         known=exports.known_state(domain, make_puzzle(domain, puzzle))))
    assert not keys(data) & {"native", "matches_native", "differs_from_native", "solved"}
    assert data["filled"] is True and data["steps"][-1]["rule_conflicts"] == []
