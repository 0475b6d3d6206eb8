"""Optional text snapshots: normalised page texts, zstd-compressed, once per content hash.

Written inside the decision's transaction (``INSERT … ON CONFLICT DO NOTHING``: two pages
or two workers with the same text store it once). ``zstandard`` is the ``text`` extra and is
imported only when texts are stored or read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from types import ModuleType

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection

from changewatch.errors import ConfigError
from changewatch.store.tables import page_texts
from changewatch.values import PageText

__all__ = [
    "DEFAULT_ZSTD_LEVEL",
    "compress_text",
    "decompress_text",
    "read_texts",
    "write_texts",
]

#: zstd level: 9 compresses page text about as well as 19 at a fraction of the time.
DEFAULT_ZSTD_LEVEL = 9

_TEXT = page_texts.c


def _zstd() -> ModuleType:
    try:
        import zstandard
    except ImportError as exc:  # pragma: no cover - the extra is installed in CI
        raise ConfigError(
            "store_text needs the zstandard package: pip install 'changewatch-crawl[text]' "
            "(from a checkout: pip install -e '.[text]')"
        ) from exc
    return zstandard


def compress_text(text: str, level: int = DEFAULT_ZSTD_LEVEL) -> bytes:
    """The text's UTF-8 bytes, zstd-compressed (a self-describing frame)."""
    return bytes(_zstd().ZstdCompressor(level=level).compress(text.encode("utf-8")))


def decompress_text(blob: bytes) -> str:
    """The inverse of :func:`compress_text`."""
    return bytes(_zstd().ZstdDecompressor().decompress(blob)).decode("utf-8")


def write_texts(conn: Connection, now: datetime, texts: Sequence[PageText]) -> None:
    """Keep each text not stored yet (by content hash), in the caller's transaction."""
    unique = {t.content_sha256: t for t in texts}
    if not unique:
        return
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    rows = []
    for digest in sorted(unique):  # one lock order for concurrent writers
        text = unique[digest]
        blob = compress_text(text.text)
        rows.append(
            {
                "content_sha256": digest,
                "text_zstd": blob,
                "text_bytes": len(text.text.encode("utf-8")),
                "compressed_bytes": len(blob),
                "fingerprint_version": text.fingerprint_version,
                "first_stored": now,
            }
        )
    stmt = insert(page_texts).on_conflict_do_nothing(index_elements=[_TEXT.content_sha256])
    conn.execute(stmt, rows)


_READ = sa.select(_TEXT.content_sha256, _TEXT.text_zstd).where(
    _TEXT.content_sha256.in_(sa.bindparam("digests", expanding=True))
)


def read_texts(conn: Connection, digests: Sequence[bytes]) -> dict[bytes, str]:
    """The stored texts of these content hashes (missing ones are left out)."""
    if not digests:
        return {}
    rows = conn.execute(_READ, {"digests": sorted(set(digests))}).all()
    return {bytes(r[0]): decompress_text(bytes(r[1])) for r in rows}
