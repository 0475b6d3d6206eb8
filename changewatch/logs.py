"""Structured log lines: ``key=value`` or JSON, one record per line.

changewatch logs through :mod:`logging` (loggers ``changewatch`` and
``changewatch.decisions``); structured fields travel in ``extra={"fields": {...}}``.
:func:`configure_logging` installs a handler that renders every record as

``kv``
    ``ts=2026-03-01T12:00:00.123Z level=debug logger=changewatch.decisions msg=decision
    kind=new path=new digest=… distance=- ms=1.9 url=https://example.com/a``
``json``
    ``{"ts": "…", "level": "debug", "logger": "…", "msg": "decision", "kind": "new", …}``

The CLI calls it from ``--log-format`` / ``--log-level`` (or ``CHANGEWATCH_LOG_FORMAT`` /
``CHANGEWATCH_LOG_LEVEL``); an application calls it once at start-up, or attaches
:class:`KeyValueFormatter` / :class:`JsonFormatter` to its own handler. Passwords in any
``scheme://user:password@`` text of a message are masked by both formatters; decision URLs
are already cut to what the URL-storage policy allows (:func:`changewatch.observe.loggable_url`).
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

__all__ = ["JsonFormatter", "KeyValueFormatter", "configure_logging"]

_USERINFO_RE = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)[^@\s]+@")
_BARE_RE = re.compile(r"^[^\s=\"]+$")
_HANDLER_NAME = "changewatch-structured"


def _mask(text: str) -> str:
    return _USERINFO_RE.sub(r"\1***@", text)


def _fields(record: logging.LogRecord) -> Iterator[tuple[str, Any]]:
    ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
    yield "ts", ts.replace("+00:00", "Z")
    yield "level", record.levelname.lower()
    yield "logger", record.name
    # A record may name its event apart from a message written for other formatters.
    event = getattr(record, "event", None)
    yield "msg", _mask(event if isinstance(event, str) else record.getMessage())
    extra = getattr(record, "fields", None)
    if isinstance(extra, dict):
        for key, value in extra.items():
            yield key, _mask(value) if isinstance(value, str) else value
    if record.exc_info:
        exc = record.exc_info[1]
        yield "error", _mask(f"{type(exc).__name__}: {exc}")


def _kv_value(value: Any) -> str:
    if value is None:
        return "-"
    text = str(value)
    return text if _BARE_RE.match(text) else json.dumps(text, ensure_ascii=False)


class KeyValueFormatter(logging.Formatter):
    """``key=value`` pairs; values with spaces, quotes or ``=`` are JSON-quoted."""

    def format(self, record: logging.LogRecord) -> str:
        return " ".join(f"{key}={_kv_value(value)}" for key, value in _fields(record))


class JsonFormatter(logging.Formatter):
    """One JSON object per line."""

    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(dict(_fields(record)), ensure_ascii=False, default=str)


def configure_logging(
    log_format: str = "kv", level: str | int = "WARNING", stream: IO[str] | None = None
) -> logging.Handler:
    """Send the ``changewatch`` loggers to ``stream`` (stderr) in ``log_format``.

    Replaces a handler this function installed before (calling it twice does not double the
    lines); returns the handler.
    """
    logger = logging.getLogger("changewatch")
    for old in [h for h in logger.handlers if h.get_name() == _HANDLER_NAME]:
        logger.removeHandler(old)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(JsonFormatter() if log_format == "json" else KeyValueFormatter())
    logger.addHandler(handler)
    logger.setLevel(level)
    return handler
