"""The app's settings from the environment (README, "A tour of the app"): a bad value names its variable."""

import pytest

from mi_lens_app import core


@pytest.mark.parametrize("value", ["two", "1.5", "0", "-1", "²"])
def test_a_bad_thread_count_names_the_variable(monkeypatch, value):
    """``MI_LENS_THREADS=two`` showed the page's error as "invalid literal for int() with base 10: 'two'", with no
    word of which setting was wrong."""
    monkeypatch.setenv("MI_LENS_THREADS", value)
    with pytest.raises(ValueError, match=f"MI_LENS_THREADS must be a whole number >= 1, got '{value}'"):
        core.use_app_threads()


@pytest.mark.parametrize("value", [" 1 ", ""])  # set but empty: the default, 1
def test_a_good_thread_count_is_used(monkeypatch, value):
    import torch

    before = torch.get_num_threads()
    monkeypatch.setenv("MI_LENS_THREADS", value)
    try:
        assert core.use_app_threads() == 1 and torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)


def test_a_bad_device_names_the_variable(monkeypatch):
    """``MI_LENS_DEVICE=gpu`` showed "unknown device 'gpu'" on the page, not which setting gave it."""
    monkeypatch.setenv("MI_LENS_DEVICE", "gpu")
    with pytest.raises(ValueError, match="^MI_LENS_DEVICE: unknown device 'gpu'; choose auto"):
        core.app_device()
    monkeypatch.setenv("MI_LENS_DEVICE", "cpu")
    assert core.app_device().type == "cpu"
