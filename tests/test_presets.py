"""The app's preset puzzles: rebuilt bit for bit from the seeded generator, and the showcase the app opens on
shows what it was picked for on the shipped default model."""

import json
import sys

import numpy as np
import pytest
import torch

from mi_core.domain import get_domain
from mi_lens_app import core, traces
from mi_lens_app.domains import PRESETS_PATH, load_presets

sys.path.insert(0, "scripts")
import make_presets  # noqa: E402


def app_defaults(name: str, domain) -> dict:
    """The parameters the Decoding page opens strategy ``name`` with on ``domain``."""
    return {f.name: f.default for f in core.strategy_fields(name, domain.strategy_defaults) if f.default is not None}


def test_presets_file_is_what_the_script_writes(tmp_path):
    out = tmp_path / "presets.json"
    assert make_presets.main(["--out", str(out)]) == 0
    assert json.loads(out.read_text()) == json.loads(PRESETS_PATH.read_text())


@pytest.fixture(scope="module")
def default_sudoku():
    torch.set_num_threads(1)
    domain = get_domain("sudoku")
    model, _ = core.load_domain_model(domain, torch.device("cpu"))
    return domain, model, core.load_domain_estimator(domain, torch.device("cpu"))


def test_the_showcase_goes_wrong_without_mi_and_right_with_it(default_sudoku):
    domain, model, estimator = default_sudoku
    showcase = load_presets()["sudoku9"][0]
    assert showcase.name.startswith("MI showcase")
    solution = domain.state_text(domain.solution(domain.parse_state(showcase.puzzle)))

    def decode(name, params):
        return traces.decode_trace(model, estimator, domain, showcase.puzzle, solution, name, params, 0.0, 0)

    with_mi = decode("mi", app_defaults("mi", domain))
    without = decode("eb", app_defaults("eb", domain))
    assert with_mi.solved and len(with_mi.steps) - 1 == 5  # several steps to walk a class through
    assert not without.solved
    first_wrong = next(s.step for s in without.steps if s.errors.any())
    assert first_wrong == 2 and int(without.steps[-1].errors.sum()) == 11  # as scripts/make_presets.py says
    conflicts = traces.rule_conflicts(without.steps[-1].tokens, domain.rules(domain.cells))
    assert np.asarray(conflicts).any()  # the board breaks a rule a class can see


def test_argmax_fills_the_first_protein_preset_with_g_as_the_app_says():
    from mi_lens_app.sequences import load_protein_presets
    from mi_lens_app.texts import PROTEIN_ARGMAX

    domain = get_domain("protein")
    model, description = core.load_domain_model(domain, torch.device("cpu"))
    if "protein MDM" not in description:
        pytest.skip("ESM-C weights are installed: the protein domain does not run the small CATH MDM")
    preset = load_protein_presets()[0]
    assert preset.masking.positions == "20-31" and "12 G's" in PROTEIN_ARGMAX
    masked = "".join("_" if 19 <= i <= 30 else c for i, c in enumerate(preset.sequence))
    trace = traces.decode_trace(model, core.load_domain_estimator(domain, torch.device("cpu")), domain, masked,
                              preset.sequence, "mi", app_defaults("mi", domain))
    assert domain.state_text(trace.steps[-1].tokens)[19:31] == "G" * 12
