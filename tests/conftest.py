import sys
import threading

import pytest
import torch

# one thread: tests are many small ops, where a second thread costs more than it gives on 2 cores
torch.set_num_threads(1)

SHIPPED_MDM = "assets/sudoku_mdm.safetensors"


@pytest.fixture
def tiny_mdm():
    """A tiny randomly initialised 9x9 Sudoku MDM (fast; for shapes and invariants)."""
    from mi_core.domains.sudoku.mdm import SudokuMDM, SudokuMDMConfig

    torch.manual_seed(0)
    return SudokuMDM(SudokuMDMConfig(box=3, d_model=32, n_layers=1, n_heads=2, d_ff=64)).eval()


@pytest.fixture
def model_path(tmp_path, tiny_mdm):
    """The tiny MDM saved as safetensors + JSON, for command-line tests."""
    from mi_core.domains.sudoku.mdm import save_sudoku_mdm

    path = tmp_path / "tiny.safetensors"
    save_sudoku_mdm(tiny_mdm, path)
    return path


def pytest_collection_modifyitems(config, items):
    """Tests marked ``cuda`` stay selected everywhere and are skipped, with the reason, without CUDA."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False here); "
                                   "run scripts/device_check.sh on a GPU machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


def pytest_sessionfinish(session, exitstatus):
    """Wait for the app's warm-up thread (a page run in a test starts it): a daemon thread still loading a model in
    torch when the interpreter exits aborts the process ("terminate called without an active exception", exit 134)
    after every test has passed, as a short run of app tests did."""
    warm = sys.modules.get("mi_lens_app.warm")
    for thread in threading.enumerate() if warm else ():
        if thread.name == warm.WARM_THREAD:
            thread.join(timeout=300)
