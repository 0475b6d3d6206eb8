"""Binary bodies take a path of their own: hashed as bytes, never compared by SimHash."""

from __future__ import annotations

import random

from changewatch import ChangeWatch

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
URL = "https://example.com/files/report"


def test_binary_bodies_have_their_own_path(watch: ChangeWatch) -> None:
    """A new binary is path "binary"; other bytes are "changed" with no distance (binaries
    have no SimHash), the same bytes "unchanged" on the raw path; history keeps no distance."""
    rng = random.Random(3)
    first, second = rng.randbytes(4000), rng.randbytes(4000)
    d = watch.should_parse(URL, first)
    assert (d.kind, d.path, d.distance, d.simhash) == ("new", "binary", None, 0)
    d = watch.should_parse(URL, second)
    assert (d.kind, d.path, d.distance, d.version) == ("changed", "binary", None, 2)
    d = watch.should_parse(URL, second)
    assert (d.kind, d.path) == ("unchanged", "raw")
    assert [(v.kind, v.distance) for v in watch.history(URL)] == [("new", None), ("changed", None)]


def test_a_png_without_content_type_is_not_parsed_as_html(watch: ChangeWatch) -> None:
    """A PNG sniffed by its signature is binary even without a content type."""
    d = watch.should_parse("https://example.com/logo", PNG)
    assert d.path == "binary"
    d = watch.should_parse("https://example.com/logo", PNG[:-1] + b"\x00")
    assert (d.kind, d.path, d.distance) == ("changed", "binary", None)
