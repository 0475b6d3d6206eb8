"""Where raw text ends (HTML §13.2.5.2-31): script, style, textarea, title and the like —
pure, no I/O; for the model of :mod:`~changewatch.fingerprint.nesting`."""

from __future__ import annotations

import re

__all__ = ["RAW_TEXT", "raw_text_end", "script_end"]

_WS = r"\t\n\f\r "
#: Elements whose content is text (§13.2.5.2-7); outside SVG/MathML only.
RAW_TEXT = frozenset(["iframe", "noembed", "noframes", "style", "textarea", "title", "xmp"])


def _end_tag_re(name: str) -> tuple[re.Pattern[str], re.Pattern[bytes]]:
    pattern = rf"</{name}[{_WS}/>]"
    return re.compile(pattern, re.IGNORECASE), re.compile(pattern.encode(), re.IGNORECASE)


_END_TAGS = {name: _end_tag_re(name) for name in (*RAW_TEXT, "script")}


def raw_text_end(text: str | bytes, pos: int, name: str) -> int:
    """Where the raw text (RCDATA) of ``name`` ends: after ``</name`` (§13.2.5.2-3)."""
    pattern = _END_TAGS[name][isinstance(text, bytes)]
    match = pattern.search(text, pos)  # type: ignore[arg-type]
    return -1 if match is None else match.start()


_SCRIPT_STATES = (
    re.compile(rf"</script[{_WS}/>]|<!--", re.IGNORECASE),
    re.compile(rf"</script[{_WS}/>]|<script[{_WS}/>]|-->", re.IGNORECASE),
    re.compile(rf"</script[{_WS}/>]|-->", re.IGNORECASE),
)
_SCRIPT_STATES_BYTES = tuple(
    re.compile(pattern.pattern.encode(), re.IGNORECASE) for pattern in _SCRIPT_STATES
)


def script_end(text: str | bytes, pos: int) -> int:
    """Where a script's text ends (§13.2.5.4, 15-31): at ``</script``, except inside
    ``<!--`` … ``-->`` after a ``<script`` (the double-escaped state), where ``</script``
    only ends that state."""
    states = _SCRIPT_STATES_BYTES if isinstance(text, bytes) else _SCRIPT_STATES
    state = 0  # 0 data, 1 escaped, 2 double escaped
    while True:
        match = states[state].search(text, pos)  # type: ignore[arg-type]
        if match is None:
            return -1
        found = match.group(0)[:3].lower()
        pos = match.end()
        if found in ("</s", b"</s"):
            if state != 2:
                return match.start()
            state = 1
        elif found in ("<!-", b"<!-"):
            state = 1
        elif found in ("-->", b"-->"):
            state = 0
        else:  # <script inside <!--
            state = 2
