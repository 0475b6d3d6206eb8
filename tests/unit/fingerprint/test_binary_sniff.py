"""Binary bodies are told from HTML by their first bytes alone, without a content type."""

from __future__ import annotations

import gzip
import io
import random
import struct
import zipfile
import zlib

import pytest

from changewatch.fingerprint import fingerprint, is_binary


def _png() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def _zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("index.html", "<p>inside an archive</p>")
    return buffer.getvalue()


def _webp() -> bytes:
    payload = b"VP8 " + struct.pack("<I", 4) + b"\x00\x00\x00\x00"
    return b"RIFF" + struct.pack("<I", 4 + len(payload)) + b"WEBP" + payload


BINARIES = {
    "png": _png(),
    "jpeg": b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00",
    "gif": b"GIF89a\x01\x00\x01\x00\x80\x00\x00\xff\xff\xff\x00\x00\x00!\xf9\x04\x01",
    "webp": _webp(),
    "pdf": b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n",
    "zip": _zip(),
    "gzip": gzip.compress(b"<html><body><p>compressed html</p></body></html>"),
    "elf": b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00",
    "random": random.Random(14).randbytes(3000),
    "short random": bytes([0x01, 0x9C, 0x00, 0x7E, 0x13, 0xF0]),
}


@pytest.mark.parametrize("name", BINARIES)
def test_binary_without_content_type(name: str) -> None:
    """PNG, JPEG, GIF, WebP, PDF, ZIP, gzip, ELF and random bytes are binary with no
    content type, so they are hashed as bytes and never parsed as HTML."""
    body = BINARIES[name]
    assert is_binary(body)
    fp = fingerprint(body)
    assert fp.binary
    assert (fp.simhash, fp.text_length) == (0, 0)


def test_random_bytes_after_markup_are_binary() -> None:
    """A ``<`` first does not make random bytes text."""
    assert is_binary(b"<" + random.Random(2).randbytes(1500))


def test_random_bytes_are_binary_whatever_the_seed() -> None:
    """Random bodies from 200 bytes up are binary, also those that happen to open with ``<``."""
    rng = random.Random(1)
    for size in (200, 1000, 5000):
        for _ in range(100):
            assert is_binary(rng.randbytes(size)), size


@pytest.mark.parametrize(
    "body",
    [
        b"<!doctype html><p>caf\xe9 au lait</p>",
        "<p>日本語のページ</p>".encode(),
        "<p>hi there</p>".encode("utf-16-le"),
        "<p>hi there</p>".encode("utf-16"),
        "<p>hi there</p>".encode("utf-32"),
        b"\x1b$B<p>\x1b(B iso-2022-jp escapes",
        b"  \n<p>a stray \x01 control byte inside markup</p>",
        b"plain text, tabs\tand\r\nnew lines\x0c",
        b"",
    ]
    + [b"<p>" + b"x" * 200 + bytes([c]) + b"</p>" for c in (0x00, 0x01, 0x08, 0x0B, 0x1F)]
    + [b"<p>a\x00b</p>\x00<p>c</p>", b"<p>a\xc3\x00\x80b \xe2\x82\x00\xac</p>"],
)
def test_text_is_not_binary(body: bytes) -> None:
    """HTML and text in any encoding (UTF-16/32 with or without a BOM, ISO-2022 escapes, a
    stray control byte after markup) stay text."""
    assert not is_binary(body)
