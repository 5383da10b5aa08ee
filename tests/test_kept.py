"""report.Kept: a long command's finished work in OUT.json.partial, appended as it finishes, read back on --resume."""

import json
from types import SimpleNamespace

import pytest

from mi_core.bench.report import Kept, partial_path, read_kept

SETTINGS = {"seed": 0, "states": 60}


def kept(tmp_path, resume=False, settings=SETTINGS, **kwargs) -> Kept:
    return Kept(SimpleNamespace(json=tmp_path / "out.json", resume=resume), "eval-estimator", settings, "states",
                valid=lambda value: isinstance(value, list), **kwargs)


def test_each_keep_appends_only_its_own_items(tmp_path):
    """eval-estimator rewrote its whole .partial (every state's N x N MI) after each chunk: the writing grew with
    the square of the run (a 49 MB file, 1.6 s a write, at 60 states of length 200). A keep now appends its items'
    lines to the file, whose earlier bytes stay as they were."""
    store = kept(tmp_path)
    store.keep({"0": [[0.5] * 2000]})
    path = partial_path(tmp_path / "out.json")
    before, inode = path.read_bytes(), path.stat().st_ino
    store.keep({"1": [1]})
    after = path.read_bytes()
    assert path.stat().st_ino == inode and after.startswith(before) and after[len(before):] == b'["1", [1]]\n'
    again = kept(tmp_path, resume=True)
    assert again.done == {"0": [[0.5] * 2000], "1": [1]}


def test_a_last_line_cut_short_by_a_kill_is_left_out_and_written_over(tmp_path):
    """A kill while a line was written leaves the file's end cut short: its whole lines are the work kept, and the
    resumed run's first keep writes the file whole again (appended, the next line would have joined the cut one)."""
    store = kept(tmp_path)
    store.keep({"0": [0]})
    store.keep({"1": [1]})
    path = partial_path(tmp_path / "out.json")
    path.write_bytes(path.read_bytes()[:-4])
    again = kept(tmp_path, resume=True)
    assert again.done == {"0": [0]}
    again.keep({"1": [2]})
    again.keep({"2": [3]})
    assert read_kept(path) == (SETTINGS, [["0", [0]], ["1", [2]], ["2", [3]]], True)


def test_a_record_of_earlier_versions_one_object_is_read(tmp_path):
    """Earlier versions kept one JSON object, ``{"settings": ..., "rows": [[key, value], ...]}``: read back, and the
    first keep writes it as lines."""
    path = partial_path(tmp_path / "out.json")
    path.write_text(json.dumps({"settings": SETTINGS, "rows": [["0", [0]]]}, indent=2))
    again = kept(tmp_path, resume=True)
    assert again.done == {"0": [0]}
    again.keep({"1": [1]})
    assert read_kept(path) == (SETTINGS, [["0", [0]], ["1", [1]]], True)


HEAD = '{"record": "mi_lens.kept/1", "settings": {"seed": 0, "states": 60}}\n'


@pytest.mark.parametrize("text", [HEAD[:30], "not json\n", '["0", [0]]\n', HEAD + '["0", 5]\n', HEAD + '{"0": [0]}\n',
                                  HEAD + 'no\n["0", [0]]\n', HEAD.replace("/1", "/2") + '["0", [0]]\n',
                                  '{"settings": {"seed": 0, "states": 60}, "rows": [["0", 5]]}'])
def test_a_damaged_record_is_one_line_naming_the_file(tmp_path, text):
    """A .partial cut short in its first line, edited, or holding values of another shape is refused naming it and
    what to do; the file is left as it was."""
    path = partial_path(tmp_path / "out.json")
    path.write_text(text)
    with pytest.raises(ValueError, match=f"^--resume: {path} is not an eval-estimator's record of finished states; "
                                         "move it away, or give --force without --resume to start again$"):
        kept(tmp_path, resume=True)
    assert path.read_text() == text


def test_bench_order_keeps_rows_only(tmp_path):
    """Kept's default took any value but None where bench-order's own check had taken only rows (objects): a row
    kept as 5 was read back, and failed later."""
    path = partial_path(tmp_path / "out.json")
    path.write_text(json.dumps({"settings": SETTINGS, "rows": [['["topk"]', 5]]}))
    with pytest.raises(ValueError, match="is not a bench-order's record of finished rows"):
        Kept(SimpleNamespace(json=tmp_path / "out.json", resume=True), "bench-order", SETTINGS)
