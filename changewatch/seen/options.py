"""Reading seen-set URLs: ``scheme:rest?opt=value&…``, each option checked, unknown ones refused."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qsl, urlsplit

from changewatch.errors import ConfigError
from changewatch.redact import redact_url, scrub
from changewatch.seen.ageing import Ageing

__all__ = ["DEFAULT_WINDOWS_PER_MAX_AGE", "SeenURL", "parse_seconds"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")

#: ``window`` when only ``max_age`` is given: a quarter of it, so 5 generations are live and an
#: entry is forgotten between max_age and 1.25·max_age.
DEFAULT_WINDOWS_PER_MAX_AGE = 4


def parse_seconds(text: str) -> float:
    """Seconds in ``90``, ``1.5``, ``45s``, ``15m``, ``12h``, ``7d``, ``1w`` or ``1d12h``.

    ``ValueError`` for anything else (negative, empty, unknown unit, not finite).

    >>> parse_seconds("1d12h"), parse_seconds("90"), parse_seconds("0.5s")
    (129600.0, 90.0, 0.5)
    """
    compact = text.strip().lower()
    try:
        value = float(compact)
    except ValueError:
        if not compact or _DURATION.sub("", compact):
            raise ValueError(
                "not a duration: use seconds, or numbers with units s, m, h, d or w "
                "(7d, 12h, 1d12h)"
            ) from None
        value = sum(float(n) * _UNITS[unit] for n, unit in _DURATION.findall(compact))
    if not math.isfinite(value) or value < 0:
        raise ValueError("not a finite, non-negative duration")
    return value


class SeenURL:
    """A parsed seen-set URL whose options are taken one by one, then checked for leftovers."""

    def __init__(self, url: str) -> None:
        if not isinstance(url, str) or ":" not in url:
            raise ConfigError(
                f"seen-set URL {url!r} has no scheme (expected memory:, file: or redis://)"
            )
        self.url = url
        self.scheme = url.partition(":")[0].lower()
        self.parts = urlsplit(url)
        try:
            pairs = parse_qsl(self.parts.query, keep_blank_values=True, strict_parsing=False)
        except ValueError as exc:
            raise self.error(f"malformed query: {exc}") from None
        self.options: dict[str, str] = {}
        self._raw = ""
        for key, value in pairs:
            if key in self.options:
                raise self.error(f"option {key!r} given twice")
            self.options[key] = value

    def error(self, message: str) -> ConfigError:
        """A :class:`ConfigError` naming this URL (without any password)."""
        shown = scrub(redact_url(self.url), [self.parts.password])
        return ConfigError(f"seen-set URL {shown!r}: {message}")

    def text(self, name: str, default: str) -> str:
        """A string option."""
        return self.options.pop(name, default)

    def choice(self, name: str, default: str, allowed: tuple[str, ...]) -> str:
        """An option that must be one of ``allowed``."""
        value = self.options.pop(name, default)
        if value not in allowed:
            raise self.error(f"{name}={value!r} is not one of {', '.join(allowed)}")
        return value

    def integer(self, name: str, default: int | None, *, minimum: int = 1) -> int | None:
        """A whole-number option of at least ``minimum`` (``1_000_000`` and ``1e6`` accepted)."""
        raw = self.options.pop(name, None)
        if raw is None:
            return default
        try:
            value = float(raw.replace("_", "")) if "e" in raw.lower() else int(raw.replace("_", ""))
        except ValueError:
            raise self.error(f"{name}={raw!r} is not a whole number") from None
        if value != int(value) or int(value) < minimum:
            raise self.error(f"{name}={raw!r} must be a whole number of at least {minimum}")
        return int(value)

    def rate(self, name: str, default: float) -> float:
        """A probability strictly between 0 and 1."""
        value = self._number(name, "a number")
        if value is None:
            return default
        if not 0.0 < value < 1.0:
            raise self.error(f"{name}={self._raw!r} must be between 0 and 1 (exclusive)")
        return value

    def seconds(self, name: str, default: float) -> float:
        """A positive, finite number of seconds."""
        value = self._number(name, "a number of seconds")
        if value is None:
            return default
        if not 0.0 < value < float("inf"):
            raise self.error(f"{name}={self._raw!r} must be a positive number of seconds")
        return value

    def duration(self, name: str, default: float | None) -> float | None:
        """A positive duration: seconds, or ``7d``, ``12h``, ``30m``, ``1d12h``…"""
        raw = self.options.pop(name, None)
        if raw is None:
            return default
        try:
            value = parse_seconds(raw)
        except ValueError as exc:
            raise self.error(f"{name}={raw!r} is {exc}") from None
        if value <= 0:
            raise self.error(f"{name}={raw!r} must be a positive duration")
        return value

    def ageing(self) -> Ageing | None:
        """``max_age`` and ``window`` (default ``max_age / 4``), or None when not ageing."""
        max_age = self.duration("max_age", None)
        window = self.duration("window", None)
        if max_age is None:
            if window is not None:
                raise self.error("window= needs max_age= (it is the width of a generation)")
            return None
        try:
            return Ageing(max_age, window or max_age / DEFAULT_WINDOWS_PER_MAX_AGE)
        except ValueError as exc:
            raise self.error(f"max_age/window: {exc}") from None

    def _number(self, name: str, what: str) -> float | None:
        """Take a float option (None when absent); the raw text is kept for messages."""
        raw = self.options.pop(name, None)
        if raw is None:
            return None
        self._raw = raw
        try:
            return float(raw)
        except ValueError:
            raise self.error(f"{name}={raw!r} is not {what}") from None

    def flag(self, name: str, default: bool) -> bool:
        """A boolean option (1/0, true/false, yes/no, on/off)."""
        raw = self.options.pop(name, None)
        if raw is None:
            return default
        if raw.lower() in _TRUE:
            return True
        if raw.lower() in _FALSE:
            return False
        raise self.error(f"{name}={raw!r} is not a boolean (use 1 or 0)")

    def done(self) -> None:
        """Refuse options nobody took."""
        if self.options:
            raise self.error(f"unknown option(s) {', '.join(sorted(self.options))}")
