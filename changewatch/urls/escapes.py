"""Percent-encoding in paths and queries (RFC 3986 §2.1, §6.2.2.1–2) — pure, no I/O."""

from __future__ import annotations

import re

# A percent-escape, or a character RFC 3986 does not allow literally in a path or query
# (unreserved + reserved), a stray "%" included. Written to start with one character class
# (so the regex engine can skip plain runs fast), and checked first with _CANONICAL_RE.
_ESCAPE_RE = re.compile(r"[^A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=](?:(?<=%)[0-9A-Fa-f]{2})?")
# Text _ESCAPE_RE.sub leaves as it is: plain runs and upper-case escapes of bytes that are
# not unreserved (%00-%2C, %2F, %3A-%40, %5B-%5E, %60, %7B-%7D, %7F-%FF).
_CANONICAL_RE = re.compile(
    r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*"
    r"(?:%(?:[01][0-9A-F]|2[0-9A-CF]|3[A-F]|40|5[B-E]|60|7[B-DF]|[89A-F][0-9A-F])"
    r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*)*"
)
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_canonical = _CANONICAL_RE.fullmatch
_escape_all = _ESCAPE_RE.sub


def _escape_table() -> dict[str, str]:
    """Every two-hex-digit escape, and every ASCII character needing one, to its canonical form."""
    table: dict[str, str] = {"%": "%25"}
    for value in range(256):
        upper = f"{value:02X}"
        for pair in {
            upper,
            upper.lower(),
            upper[0] + upper[1].lower(),
            upper[0].lower() + upper[1],
        }:
            char = chr(value)
            table["%" + pair] = char if char in _UNRESERVED else "%" + upper
        if value < 128 and chr(value) != "%" and _ESCAPE_RE.fullmatch(chr(value)):
            table[chr(value)] = "%" + upper
    return table


_ESCAPES = _escape_table()


def _escape(match: re.Match[str]) -> str:
    text = match[0]
    found = _ESCAPES.get(text)
    if found is not None:
        return found
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))
