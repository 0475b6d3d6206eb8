"""CHANGEWATCH_LEARN_NOISE: read as a boolean, off by default, passed to ChangeWatch."""

from __future__ import annotations

import pytest

from changewatch.config import load_settings, watch_arguments
from changewatch.errors import ConfigError


def test_learn_noise_off_by_default_and_on_when_set() -> None:
    """Without the variable nothing is learned; "1" turns learning on for from_env()."""
    assert load_settings({}).learn_noise is False
    assert watch_arguments({})["learn_noise"] is False
    assert watch_arguments({"CHANGEWATCH_LEARN_NOISE": "1"})["learn_noise"] is True


def test_learn_noise_garbage_is_a_clear_error() -> None:
    """Anything but the usual spellings is a ConfigError naming the variable."""
    with pytest.raises(ConfigError, match=r"CHANGEWATCH_LEARN_NOISE='sometimes'"):
        load_settings({"CHANGEWATCH_LEARN_NOISE": "sometimes"})


def test_learn_templates_is_its_own_switch() -> None:
    """CHANGEWATCH_LEARN_TEMPLATES is off by default and independent of learned noise."""
    assert watch_arguments({})["learn_templates"] is False
    on = watch_arguments({"CHANGEWATCH_LEARN_TEMPLATES": "yes"})
    assert (on["learn_templates"], on["learn_noise"]) == (True, False)
    with pytest.raises(ConfigError, match=r"CHANGEWATCH_LEARN_TEMPLATES='maybe'"):
        load_settings({"CHANGEWATCH_LEARN_TEMPLATES": "maybe"})
