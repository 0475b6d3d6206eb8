"""load_settings: defaults, each CHANGEWATCH_* variable, and refusals that name the setting."""

from __future__ import annotations

from typing import Any

import pytest

from changewatch.config import (
    DEFAULT_DATABASE_URL,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_MINOR_DISTANCE,
    DEFAULT_SEEN_URL,
    URL_POLICIES,
    Settings,
    load_settings,
)
from changewatch.errors import ChangewatchError, ConfigError


def test_defaults_from_empty_environ() -> None:
    """An empty environment gives the documented defaults."""
    settings = load_settings({})
    assert settings == Settings()
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///changewatch.db"
    assert settings.seen_url == DEFAULT_SEEN_URL == "file:changewatch.seen"
    assert settings.minor_distance == DEFAULT_MINOR_DISTANCE == 3
    assert settings.max_page_bytes == DEFAULT_MAX_PAGE_BYTES == 10 * 1024 * 1024
    assert settings.url_policy == "full"


def test_empty_values_mean_default() -> None:
    """A variable set to the empty string counts as unset."""
    environ = {
        "CHANGEWATCH_DATABASE_URL": "",
        "CHANGEWATCH_SEEN_URL": "",
        "CHANGEWATCH_MINOR_DISTANCE": "",
        "CHANGEWATCH_MAX_PAGE_BYTES": "",
        "CHANGEWATCH_URL_POLICY": "",
    }
    assert load_settings(environ) == Settings()


def test_unrelated_variables_ignored() -> None:
    """Only CHANGEWATCH_* variables are read."""
    assert load_settings({"DATABASE_URL": "postgresql://x/y", "MINOR_DISTANCE": "x"}) == Settings()


@pytest.mark.parametrize(
    ("variable", "value", "field", "expected"),
    [
        (
            "CHANGEWATCH_DATABASE_URL",
            "postgresql+psycopg://cw@db/cw",
            "database_url",
            "postgresql+psycopg://cw@db/cw",
        ),
        ("CHANGEWATCH_SEEN_URL", "memory:", "seen_url", "memory:"),
        ("CHANGEWATCH_MINOR_DISTANCE", "0", "minor_distance", 0),
        ("CHANGEWATCH_MINOR_DISTANCE", "64", "minor_distance", 64),
        ("CHANGEWATCH_MINOR_DISTANCE", "7", "minor_distance", 7),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "1", "max_page_bytes", 1),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "1_000_000", "max_page_bytes", 1_000_000),
        ("CHANGEWATCH_URL_POLICY", "no-query", "url_policy", "no-query"),
        ("CHANGEWATCH_URL_POLICY", "none", "url_policy", "none"),
        ("CHANGEWATCH_URL_POLICY", "full", "url_policy", "full"),
    ],
)
def test_each_variable(variable: str, value: str, field: str, expected: Any) -> None:
    """Each variable sets its own field and leaves the others at their defaults."""
    settings = load_settings({variable: value})
    assert getattr(settings, field) == expected
    others = {name: getattr(Settings(), name) for name in Settings.__slots__ if name != field}
    assert {name: getattr(settings, name) for name in others} == others


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("CHANGEWATCH_MINOR_DISTANCE", "three", "CHANGEWATCH_MINOR_DISTANCE"),
        ("CHANGEWATCH_MINOR_DISTANCE", "3.0", "CHANGEWATCH_MINOR_DISTANCE"),
        ("CHANGEWATCH_MINOR_DISTANCE", "0x3", "CHANGEWATCH_MINOR_DISTANCE"),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "10MB", "CHANGEWATCH_MAX_PAGE_BYTES"),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "1e6", "CHANGEWATCH_MAX_PAGE_BYTES"),
        ("CHANGEWATCH_MINOR_DISTANCE", "65", "minor_distance"),
        ("CHANGEWATCH_MINOR_DISTANCE", "-1", "minor_distance"),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "0", "max_page_bytes"),
        ("CHANGEWATCH_MAX_PAGE_BYTES", "-5", "max_page_bytes"),
        ("CHANGEWATCH_URL_POLICY", "bogus", "url_policy"),
        ("CHANGEWATCH_URL_POLICY", "FULL", "url_policy"),
    ],
)
def test_invalid_values_raise_config_error(variable: str, value: str, named: str) -> None:
    """Non-integers, out-of-range numbers and unknown policies raise a ConfigError naming them."""
    with pytest.raises(ConfigError) as info:
        load_settings({variable: value})
    message = str(info.value)
    assert named in message
    assert repr(value) in message or value in message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, ChangewatchError)


def test_url_policy_error_lists_choices() -> None:
    """The url_policy error lists the accepted policies."""
    with pytest.raises(ConfigError) as info:
        load_settings({"CHANGEWATCH_URL_POLICY": "bogus"})
    assert all(policy in str(info.value) for policy in URL_POLICIES)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"minor_distance": 65}, "minor_distance"),
        ({"minor_distance": True}, "minor_distance"),
        ({"minor_distance": 3.0}, "minor_distance"),
        ({"max_page_bytes": 0}, "max_page_bytes"),
        ({"max_page_bytes": False}, "max_page_bytes"),
        ({"url_policy": "bogus"}, "url_policy"),
    ],
)
def test_settings_validated_on_construction(kwargs: dict[str, Any], named: str) -> None:
    """Settings built directly are checked the same way (bools are not integers)."""
    with pytest.raises(ConfigError, match=named):
        Settings(**kwargs)


def test_settings_frozen() -> None:
    """Settings cannot be changed after validation."""
    settings = Settings()
    with pytest.raises(AttributeError):
        settings.minor_distance = 70  # type: ignore[misc]


def test_os_environ_read_when_no_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a mapping, load_settings reads os.environ."""
    monkeypatch.setenv("CHANGEWATCH_MINOR_DISTANCE", "9")
    monkeypatch.setenv("CHANGEWATCH_SEEN_URL", "memory:")
    settings = load_settings()
    assert settings.minor_distance == 9
    assert settings.seen_url == "memory:"
