"""Fingerprints of structured records (the fields a crawler extracted) — pure, no I/O."""

from __future__ import annotations

import hashlib
import json
import math
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

__all__ = ["canonical_json", "fingerprint_record"]


def canonical_json(record: Mapping[str, Any]) -> bytes:
    """The canonical JSON of a record: UTF-8, sorted keys, no spaces, NFC strings.

    Numbers: ``int`` as is; ``float`` and ``Decimal`` by their shortest decimal digits in
    ECMAScript ``Number.prototype.toString`` layout (RFC 8785 §3.2.2.3): ``1.0`` → ``1``,
    ``-0.0`` → ``0``, ``0.1`` → ``0.1``, ``1e21`` → ``1e+21``; NaN and infinities raise
    ``ValueError``. Lists and tuples are arrays, mappings (``str`` keys) objects, ``None``
    ``null``. Anything else (sets, bytes, dates, …) raises ``TypeError`` naming its path.

    >>> canonical_json({"b": [1.0, Decimal("2.50"), None], "a": "Cafe\\u0301", "c": -0.0})
    b'{"a":"Caf\\xc3\\xa9","b":[1,2.5,null],"c":0}'
    """
    if not isinstance(record, Mapping):
        raise TypeError(f"$: a record must be a mapping, not {type(record).__name__}")
    parts: list[str] = []
    _encode(record, "$", parts)
    return "".join(parts).encode("utf-8", "surrogatepass")


def fingerprint_record(record: Mapping[str, Any]) -> bytes:
    """SHA-256 of :func:`canonical_json` — a stable hash of fields extracted from a page.

    Key order, ``1`` versus ``1.0``, and composed versus decomposed accents do not change it.

    >>> fingerprint_record({"price": 10, "title": "Café"}) == fingerprint_record(
    ...     {"title": "Cafe\\u0301", "price": 10.0})
    True
    >>> fingerprint_record({"a": 1}).hex()[:16]
    '015abd7f5cc57a2d'
    """
    return hashlib.sha256(canonical_json(record)).digest()


def _encode(value: Any, path: str, out: list[str]) -> None:
    if value is None or value is True or value is False:
        out.append("null" if value is None else "true" if value else "false")
    elif isinstance(value, str):
        out.append(json.dumps(unicodedata.normalize("NFC", value), ensure_ascii=False))
    elif isinstance(value, int):
        out.append(str(int(value)))
    elif isinstance(value, float | Decimal):
        out.append(_number(value, path))
    elif isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{path}: keys must be str, not {type(key).__name__} {key!r}")
            nfc = unicodedata.normalize("NFC", key)
            if nfc in items:
                raise ValueError(f"{path}: keys {key!r} and another are equal after NFC")
            items[nfc] = item
        out.append("{")
        for index, key in enumerate(sorted(items)):
            if index:
                out.append(",")
            out.append(json.dumps(key, ensure_ascii=False))
            out.append(":")
            _encode(items[key], f"{path}.{key}", out)
        out.append("}")
    elif isinstance(value, list | tuple):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(",")
            _encode(item, f"{path}[{index}]", out)
        out.append("]")
    else:
        raise TypeError(f"{path}: cannot fingerprint a {type(value).__name__} ({value!r:.60})")


def _number(value: float | Decimal, path: str) -> str:
    """Shortest decimal digits, laid out as ECMAScript ``Number.prototype.toString`` does."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path}: {value!r} is not a finite number")
        value = Decimal(repr(value))
    elif not value.is_finite():
        raise ValueError(f"{path}: {value!r} is not a finite number")
    sign, digit_tuple, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).lstrip("0")
    if not digits:
        return "0"
    stripped = digits.rstrip("0")
    exponent += len(digits) - len(stripped)
    digits = stripped
    point = len(digits) + exponent  # value = 0.<digits> × 10**point
    if 0 < point <= 21:
        text = digits + "0" * exponent if exponent >= 0 else f"{digits[:point]}.{digits[point:]}"
    elif -6 < point <= 0:
        text = "0." + "0" * -point + digits
    else:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        text = f"{mantissa}e{point - 1:+d}"
    return ("-" if sign else "") + text
