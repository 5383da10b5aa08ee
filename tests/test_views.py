"""A model averaged over a domain's symmetric views: the index bookkeeping, the domain's views, and the CLI."""

import json

import pytest
import torch

from mi_core.cli import main
from mi_core.domain import get_domain
from mi_core.domains.sudoku import SUDOKU9, parse_grid
from mi_core.domains.sudoku.data import symmetry_views
from mi_core.domains.sudoku.generator import is_valid_solution
from mi_core.models.base import MaskedLM, MDMOutput
from mi_core.models.views import Views, with_views
from tests.test_iterations import recurrent_model
from tests.test_sudoku_training import HARD, SOLVED

PEERS = torch.as_tensor(SUDOKU9.peers(), dtype=torch.float32)


class Elimination(MaskedLM):
    """An equivariant Sudoku 'model': a value is unlikely where a peer holds it, likelier the more often it is
    placed. Any view of a state, read back, gives the same logits; a wrong index map would not."""

    seq_len = 81

    def __init__(self):
        super().__init__()
        self.register_buffer("value_tokens", torch.arange(1, 10))
        self.cfg = None

    def forward(self, tokens):
        onehot = torch.nn.functional.one_hot(tokens, 10)[..., 1:].float()  # (B, 81, 9), 0 for a blank
        logits = -3.0 * torch.einsum("ij,bjv->biv", PEERS, onehot) + 0.4 * onehot.sum(1, keepdim=True)
        return MDMOutput(logits, onehot)


def test_views_of_an_equivariant_model_change_nothing():
    tokens = torch.tensor([parse_grid(HARD)])
    plain = Elimination()(tokens).logits.log_softmax(-1)
    ensemble = Views(Elimination(), *symmetry_views(8, seed=3))
    assert torch.allclose(ensemble(tokens).logits, plain, atol=1e-5)
    assert torch.equal(ensemble(tokens).hidden, Elimination()(tokens).hidden)  # view 0's hidden states


def test_views_average_log_probabilities_read_back():
    """A model that is not equivariant: each view's log-probabilities, mapped back by hand, then averaged."""
    model = recurrent_model(2)
    tokens = torch.tensor([parse_grid(HARD), parse_grid(SOLVED[:40] + "." * 41)])
    positions, values = symmetry_views(3, seed=1)
    expected = 0
    for k in range(3):
        seen = torch.zeros_like(tokens)
        for j in range(81):
            t = tokens[:, positions[k, j]]
            seen[:, j] = torch.where(t == 0, 0, values[k][(t - 1).clamp(min=0)] + 1)
        logp = model(seen).logits.log_softmax(-1)
        back = torch.empty_like(logp)
        for j in range(81):
            for v in range(9):
                back[:, positions[k, j], v] = logp[:, j, values[k, v]]
        expected = expected + back / 3
    with torch.no_grad():
        assert torch.allclose(Views(model, positions, values)(tokens).logits, expected, atol=1e-5)
        assert Views(model, positions, values)(tokens[:0]).logits.shape[0] == 0


def test_sudoku_views_keep_grids_valid_and_start_with_the_identity():
    positions, values = symmetry_views(16, seed=0)
    assert torch.equal(positions[0], torch.arange(81)) and torch.equal(values[0], torch.arange(9))
    grid = torch.tensor(parse_grid(SOLVED))
    for k in range(16):
        assert sorted(positions[k].tolist()) == list(range(81)) and sorted(values[k].tolist()) == list(range(9))
        assert is_valid_solution((values[k][grid[positions[k]] - 1] + 1).numpy())
    assert len({tuple(p.tolist()) for p in positions}) == 16


def test_views_refuse_a_domain_without_symmetries_and_a_bad_first_view():
    with pytest.raises(ValueError, match="declares no symmetries"):
        with_views(recurrent_model(2), get_domain("protein"), 2)
    positions, values = symmetry_views(2)
    with pytest.raises(ValueError, match="identity"):
        Views(Elimination(), positions.flip(0), values.flip(0))
    assert with_views(Elimination(), get_domain("sudoku"), 1).__class__ is Elimination


def test_bench_records_its_views_and_refuses_them_where_a_domain_has_none(tmp_path, model_path, capsys):
    puzzles = tmp_path / "p.txt"
    puzzles.write_text(HARD + "\n")
    out = tmp_path / "r.json"
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--model", str(model_path), "--views", "3",
                 "--json", str(out)]) == 0
    assert json.loads(out.read_text())["views"] == 3
    assert main(["bench", "sudoku", "--puzzles", str(puzzles), "--views", "0"]) == 2
    assert "--views: 0 is outside the accepted range 1..64" in capsys.readouterr().err
    (tmp_path / "o.txt").write_text("12.434.221434321\n")  # a 4x4 puzzle
    assert main(["bench", "oracle4", "--puzzles", str(tmp_path / "o.txt"), "--views", "2"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --views 2 (see python -m mi_core bench oracle4 --help)" in err  # not offered
    assert "Traceback" not in err


def test_a_sweep_keeps_views_apart_and_shows_them(tmp_path, model_path):
    puzzles, out, md = tmp_path / "p.txt", tmp_path / "s.json", tmp_path / "B.md"
    puzzles.write_text(HARD + "\n")
    base = ["sweep", "sudoku", "--puzzles", str(puzzles), "--json", str(out), "--model", str(model_path),
            "--grid", "topk:k=8", "--name", "demo"]
    assert main(base) == 0
    assert main(base + ["--views", "2", "--merge", "--markdown", str(md)]) == 0
    rows = json.loads(out.read_text())
    assert [r.get("views") for r in rows] == [None, 2]  # merged beside the plain row, not over it
    assert "| sampler | params | views (a pass costs this many) | n |" in md.read_text()


class Recorder(Elimination):
    def forward(self, tokens):
        self.seen = tokens
        return MDMOutput(torch.zeros(*tokens.shape, 9), torch.zeros(*tokens.shape, 1))


def test_tokens_above_the_values_and_the_mask_pass_through_unchanged():
    positions, values = symmetry_views(2, seed=5)
    inner = Recorder()
    tokens = torch.tensor([parse_grid(HARD)])
    tokens[0, 0] = 12  # a pad token, above every value and the mask
    Views(inner, positions, values)(tokens)
    where = positions[1].argsort()[0]  # the view position that reads position 0
    assert int(inner.seen[1, where]) == 12 and int((inner.seen == 12).sum()) == 2
    assert int((inner.seen[1] == 0).sum()) == int((tokens == 0).sum())  # blanks stay blank


def test_views_average_each_kept_iteration_the_same_way():
    """The MI maps page reads a recurrent model's iterations (``keep``) and stops it early (``iterations``):
    through views, each iteration's logits are the views' mean read back, as the last one is."""
    from mi_core.models.iterations import Truncated

    ensemble = Views(recurrent_model(3), *symmetry_views(3, seed=2))
    tokens = torch.tensor([parse_grid(HARD)])
    with torch.no_grad():
        out = ensemble(tokens, keep=3)
        first = ensemble(tokens, iterations=1).logits
        second = Truncated(ensemble, 2)(tokens).logits
    assert len(out.per_iteration) == 3 and torch.allclose(out.per_iteration[-1], out.logits)
    assert torch.allclose(out.per_iteration[0], first, atol=1e-5)
    assert torch.allclose(out.per_iteration[1], second, atol=1e-5)
    assert not torch.allclose(first, out.logits)  # one iteration is not three
