"""The antibody commands on a user's own small files and near-miss inputs: each step's errors name the option
and the file that is wrong, before the model loads."""

from __future__ import annotations

from mi_core import cli
from tests.test_antibody_domain import SEQUENCES, tiny_folder  # noqa: F401 (a fixture)


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
