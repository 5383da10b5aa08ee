import numpy as np
import pytest

from mi_core.domains import protein as P
from mi_core.domains.protein import ProteinInputError


def test_token_ids_golden():
    assert P.tokenize("ACDY").tolist() == [1, 2, 3, 20]
    assert P.tokenize("ACDEFGHIKLMNPQRSTVWY").tolist() == list(range(1, 21))
    assert P.tokenize("acdy").tolist() == [1, 2, 3, 20]  # case is ignored
    assert P.tokenize("A C\nD\tY").tolist() == [1, 2, 3, 20]  # whitespace inside is ignored
    assert P.tokenize("ACDY*").tolist() == [1, 2, 3, 20]  # a final stop codon is dropped
    assert P.tokenize("_X").tolist() == [P.MASK_ID, P.MASK_ID]
    assert P.tokenize("BZJ").tolist() == [0, 0, 0]  # ambiguity codes are read as masked
    assert P.tokenize("AUOC", ambiguous="mask").tolist() == [1, 0, 0, 2]
    assert P.MASK_ID == 0 and P.PAD_ID == 21 and P.VOCAB_SIZE == 22
    assert P.tokenize("W").dtype == np.int64


def test_detokenize_round_trip():
    text = "MKT_AYWV_LLG"
    assert P.detokenize(P.tokenize(text)) == text
    assert P.detokenize(P.tokenize("MKXA")) == "MK_A"  # X comes back as the mask character
    assert P.detokenize([1, P.PAD_ID, 20, P.PAD_ID]) == "AY"  # padding is dropped
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 21, size=300)
    np.testing.assert_array_equal(P.tokenize(P.detokenize(tokens)), tokens)
    rec = P.ProteinRecord("x", P.tokenize("AC_D"))
    assert rec.length == 4 and rec.masked == 1 and rec.text() == "AC_D"


def test_parser_errors_name_letters_and_positions():
    with pytest.raises(ProteinInputError, match=r"'1' at 3"):
        P.tokenize("AC1D")
    with pytest.raises(ProteinInputError, match=r"'#' at 2, '@' at 4"):
        P.tokenize("A#C@")
    with pytest.raises(ProteinInputError, match="and 2 more"):
        P.tokenize("1234567890")
    with pytest.raises(ProteinInputError, match="empty sequence"):
        P.tokenize("  \n")
    with pytest.raises(ProteinInputError, match="empty sequence"):
        P.tokenize("*")
    with pytest.raises(ProteinInputError, match="10 residues, longer than the 5"):
        P.tokenize("ACDEFGHIKL", max_length=5)
    for gap in "-.":
        with pytest.raises(ProteinInputError, match=rf"'\{gap}' at 3"):
            P.tokenize(f"AC{gap}DE")
    with pytest.raises(ProteinInputError, match=r"'\*' at 2"):  # a stop codon only at the very end
        P.tokenize("A*C")
    with pytest.raises(ProteinInputError, match=r"'U' at 2, 'O' at 3 .*write X or _ in their place"):
        P.tokenize("AUOC")
    with pytest.raises(ValueError, match="ambiguous must be"):
        P.tokenize("AC", ambiguous="drop")
    with pytest.raises(ProteinInputError, match="myseq: empty"):
        P.tokenize("", name="myseq")


def test_parse_text_plain_and_errors():
    recs = P.parse_text("MKTA\nYWVL\n")
    assert len(recs) == 1 and recs[0].name == "sequence" and recs[0].text() == "MKTAYWVL"
    with pytest.raises(ProteinInputError, match="empty input"):
        P.parse_text("   \n ")
    with pytest.raises(ProteinInputError, match="empty input"):
        P.parse_text("")
    with pytest.raises(ProteinInputError, match="text before the first FASTA header"):
        P.parse_text("MKTA\n>second\nACD\n")
    with pytest.raises(ProteinInputError, match=r"'1' at 3"):
        P.parse_text("AC1D")


def test_fasta_multi_record():
    text = ">1abc A:1-80 first\nMKTA\nyw vl\n; a comment\n\n>second\nACD*\n>\nWW\n"
    recs = P.parse_text(text)
    assert [r.name for r in recs] == ["1abc A:1-80 first", "second", "sequence 3"]
    assert [r.text() for r in recs] == ["MKTAYWVL", "ACD", "WW"]
    assert [r.name for r in P.parse_text(text, limit=2)] == ["1abc A:1-80 first", "second"]
    with pytest.raises(ProteinInputError, match=r"^bad: not amino-acid letters: '-' at 2"):
        P.parse_text(">good\nAC\n>bad\nA-C\n")
    with pytest.raises(ProteinInputError, match="^empty: empty sequence"):
        P.parse_text(">empty\n>next\nAC\n")
    with pytest.raises(ProteinInputError, match="longer than the 3"):
        P.parse_text(">a\nACDE\n", max_length=3)


def test_the_strict_rule_names_the_first_record_it_leaves_out(tmp_path, capsys):
    """``bench protein --reference`` with one mistyped record said "1 of 11 records left out" and no more: which
    record, and why, was left to the user to find."""
    cases = [(">a\nMKTAYW\n>typo\nMKT1AYW\n", "the first: 'typo', '1' at 4"),
             (">a\nMKTAYW\n>xx\nAAXXA\n", "the first: 'xx', 2 of 5 residues X"),
             (">long\n" + "A" * 30 + "\n>a\nMKTAYW\n", "the first: 'long', 30 residues")]
    for text, said in cases:
        path = tmp_path / "set.fa"
        path.write_text(text)
        assert [r.text() for r in P.read_fasta(path, strict=True, max_length=25)] == ["MKTAYW"]
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.rstrip().endswith(f"or over 25 residues); {said}"), err


def test_read_fasta_strict_rule(tmp_path, capsys):
    path = tmp_path / "set.fa"
    x_ok = "A" * 19 + "X"  # 5% X: kept, X masked
    x_bad = "A" * 8 + "XX"  # 20% X: skipped
    path.write_text(f">good\nmktayw\n>amb\nACBD\n>xok\n{x_ok}\n>xbad\n{x_bad}\n>gap\nAC-D\n>rare\nAUC\n"
                    f">long\n{'A' * 30}\n>stop\nWWC*\n")
    recs = P.read_fasta(path, strict=True, max_length=25)
    assert [r.name for r in recs] == ["good", "xok", "stop"]
    assert recs[0].text() == "MKTAYW" and recs[1].masked == 1 and recs[2].text() == "WWC"
    assert "set.fa: 5 of 8 records left out (letters other than the 20 amino acids and X, over 10% X, or over 25 " \
        "residues)" in capsys.readouterr().err  # training said nothing of them
    assert [r.name for r in P.read_fasta(path, strict=True, max_length=25, limit=2)] == ["good", "xok"]
    # not strict: the first bad record is an error naming the file
    with pytest.raises(ProteinInputError, match=r"set\.fa: gap: not amino-acid letters: '-' at 3"):
        P.read_fasta(path)
    bad = tmp_path / "none.fa"
    bad.write_text(">a\nAC-D\n>b\nBBB1\n")
    with pytest.raises(ProteinInputError, match="no usable sequences"):
        P.read_fasta(bad, strict=True)
    with pytest.raises(FileNotFoundError, match="FASTA file not found"):
        P.read_fasta(tmp_path / "absent.fa")
    binary = tmp_path / "bin.fa"
    binary.write_bytes(b"\x00\x01\xff\x81")
    with pytest.raises(ProteinInputError, match="bin.fa is not a text file"):
        P.read_fasta(binary)


def test_split_of_deterministic_and_proportions():
    names = [f"cath|4_3_0|{i:05d}A01/1-{100 + i % 50}" for i in range(20000)]
    splits = [P.split_of(n) for n in names]
    assert splits == [P.split_of(n) for n in names]  # deterministic
    counts = {s: splits.count(s) / len(names) for s in P.SPLITS}
    assert abs(counts["val"] - 0.05) < 0.007 and abs(counts["reference"] - 0.05) < 0.007
    assert abs(counts["train"] - 0.90) < 0.01
    other = [P.split_of(n, seed=1) for n in names]
    assert other != splits  # the seed changes the split
    assert sum(a == b for a, b in zip(splits, other)) / len(names) < 0.9


def test_split_records_disjoint_and_order_free():
    rng = np.random.default_rng(0)
    recs = [P.ProteinRecord(f"seq{i}", rng.integers(1, 21, 10)) for i in range(2000)]
    out = P.split_records(recs)
    assert set(out) == set(P.SPLITS)
    names = {s: {r.name for r in out[s]} for s in P.SPLITS}
    assert sum(len(v) for v in names.values()) == len(recs)
    assert not (names["train"] & names["val"]) and not (names["train"] & names["reference"])
    assert not (names["val"] & names["reference"])
    shuffled = P.split_records(list(reversed(recs)))
    assert {s: {r.name for r in shuffled[s]} for s in P.SPLITS} == names  # independent of file order
    assert all(P.split_of(r.name) == s for s in P.SPLITS for r in out[s])


def test_a_file_without_a_fasta_header_says_it_was_read_as_one_sequence(tmp_path):
    path = tmp_path / "notes.fa"
    path.write_text("notfasta\n")
    with pytest.raises(ProteinInputError, match=r"has no FASTA header \('>name'\), so it was read as one sequence: "
                                                 r".*'O' at 2"):
        P.read_fasta(path)


def test_a_numbered_listing_is_named_as_such():
    """A GenBank ORIGIN / EMBL block pasted whole ("1 MVLSPADKTN VKAAWGKVGA\\n11 HAGEYGAEAL") read "not amino-acid
    letters: '1' at 1, '1' at 22, '1' at 23" and said no more: the numbers are named, and how positions count."""
    with pytest.raises(ProteinInputError, match=r"'1' at 1, '1' at 22, '1' at 23 \(residue numbers, as a GenBank or "
                       r"EMBL listing writes them: give the letters alone; positions count the characters other than "
                       r"spaces and line breaks\)"):
        P.parse_text("1 MVLSPADKTN VKAAWGKVGA\n11 HAGEYGAEAL ERMFLSFPTT")
    with pytest.raises(ProteinInputError, match=r"'1' at 3, '-' at 4$"):  # other characters too: no such guess
        P.parse_text("MK1-AYI")


def test_read_fasta_strict_says_why_no_record_was_usable(tmp_path):
    """A reference FASTA whose every record was left out (aligned with gaps, a stop inside) or that has no header
    was refused as 'no usable sequences' alone: neither the reason nor a missing header was named."""
    gaps = tmp_path / "aligned.fa"
    gaps.write_text(">a\nAC-D\n>b\nMK*T\n")
    with pytest.raises(ProteinInputError, match=r"aligned\.fa: no usable sequences: all 2 records left out .*"
                                                r"the first: 'a', '-' at 3"):
        P.read_fasta(gaps, strict=True)
    plain = tmp_path / "plain.fa"
    plain.write_text("MKTAYIAKQR\n")
    with pytest.raises(ProteinInputError, match=r"plain\.fa: no FASTA header \('>name'\)"):
        P.read_fasta(plain, strict=True)
    empty = tmp_path / "empty.fa"
    empty.write_text("\n")
    with pytest.raises(ProteinInputError, match=r"empty\.fa: the file is empty"):
        P.read_fasta(empty, strict=True)


def test_text_before_the_first_header_is_not_called_a_missing_header(tmp_path):
    """A FASTA file opening on a ';' comment was read as one sequence and refused as having 'no FASTA header'
    though it had; a ';' comment before the first header is now skipped (as within records), and other text
    there is named as such."""
    commented = tmp_path / "commented.fa"
    commented.write_text(";from a 1990s pipeline\n>a\nMKTAYIAKQR\n>b\nmkta\n")
    assert [(r.name, r.text()) for r in P.read_fasta(commented)] == [("a", "MKTAYIAKQR"), ("b", "MKTA")]
    titled = tmp_path / "titled.fa"
    titled.write_text("# my proteins\n>a\nMKTAYIAKQR\n")
    with pytest.raises(ProteinInputError, match=r"titled\.fa: text before the first FASTA header") as err:
        P.read_fasta(titled)
    assert "has no FASTA header" not in str(err.value)


def test_a_fasta_file_in_latin1_is_named_as_text_in_another_encoding(tmp_path):
    """A FASTA (or antibody CSV) saved by a Windows program in Windows-1252, an accent in a header, was 'not a text
    file'; it is text, in another encoding: the message says which byte and to save it as UTF-8."""
    path = tmp_path / "accents.fa"
    path.write_bytes(">prot\xe9ine 1\nMKTAYIAKQR\n".encode("latin-1"))
    with pytest.raises(ProteinInputError, match=r"accents.fa is not UTF-8 text \(byte 6, b'\\xe9': written in Latin-1 "
                                                r"or Windows-1252\?\): save it as UTF-8"):
        P.read_fasta(path)
