"""CHANGEWATCH_STORE_TEXT: read as a boolean, off by default, garbage refused."""

from __future__ import annotations

import pytest

from changewatch.config import load_settings
from changewatch.errors import ConfigError


def test_store_text_off_by_default() -> None:
    """Without the variable, texts are not stored."""
    assert load_settings({}).store_text is False


@pytest.mark.parametrize(
    ("raw", "value"),
    [("1", True), ("true", True), ("YES", True), (" on ", True), ("0", False), ("off", False)],
)
def test_store_text_values(raw: str, value: bool) -> None:
    """The usual spellings of true and false are accepted, in any case."""
    assert load_settings({"CHANGEWATCH_STORE_TEXT": raw}).store_text is value


def test_store_text_garbage_is_a_clear_error() -> None:
    """Anything else is a ConfigError naming the variable and the accepted values."""
    with pytest.raises(ConfigError, match=r"CHANGEWATCH_STORE_TEXT='maybe'.*true"):
        load_settings({"CHANGEWATCH_STORE_TEXT": "maybe"})


def test_flip_window_setting() -> None:
    """CHANGEWATCH_FLIP_WINDOW: default 10, 0 allowed, negative or garbage refused by name."""
    assert load_settings({}).flip_window == 10
    assert load_settings({"CHANGEWATCH_FLIP_WINDOW": "0"}).flip_window == 0
    for bad in ("-1", "ten"):
        with pytest.raises(ConfigError, match="CHANGEWATCH_FLIP_WINDOW"):
            load_settings({"CHANGEWATCH_FLIP_WINDOW": bad})
