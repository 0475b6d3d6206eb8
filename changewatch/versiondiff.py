"""``changewatch diff``: the unified diff between the stored texts of two versions of a page.

Orchestration over the store (history and ``page_texts``) and the pure
:mod:`changewatch.textdiff`. Texts exist only for versions first seen while ``store_text`` was
on; asking for others raises :class:`~changewatch.errors.TextNotStoredError`.
"""

from __future__ import annotations

from dataclasses import dataclass

from changewatch.errors import PageNotStoredError, TextNotStoredError
from changewatch.model import Version
from changewatch.store import SnapshotStore
from changewatch.store.texts import read_texts
from changewatch.textdiff import unified_text_diff

__all__ = ["VersionDiff", "version_diff"]


@dataclass(frozen=True, slots=True)
class VersionDiff:
    """A diff between two versions of one page (``from_version`` 0: nothing, before v1)."""

    url: str
    from_version: int
    to_version: int
    lines: list[str]


def version_diff(
    store: SnapshotStore,
    canonical: str,
    digest: bytes,
    from_version: int | None = None,
    to_version: int | None = None,
) -> VersionDiff:
    """Diff version ``from_version`` → ``to_version`` (default: the previous → the current).

    A page with a single version is diffed against nothing. ``PageNotStoredError`` for a page
    or version not in the store; ``TextNotStoredError`` when a text was not kept.
    """
    versions = {v.version: v for v in store.history(digest)}
    if not versions:
        raise PageNotStoredError(canonical)
    to_no = max(versions) if to_version is None else to_version
    from_no = (to_no - 1 if to_no - 1 in versions else 0) if from_version is None else from_version
    for number in (from_no, to_no):
        if number != 0 and number not in versions:
            raise PageNotStoredError(
                canonical,
                f"{canonical!r} has no version {number} (stored: "
                f"{', '.join(str(n) for n in sorted(versions))})",
            )
    wanted = [versions[n] for n in (from_no, to_no) if n != 0]
    texts = read_texts(store, [v.content_sha256 for v in wanted])
    missing = sorted({v.version for v in wanted if v.content_sha256 not in texts})
    if missing:
        raise TextNotStoredError(canonical, missing)

    def text(number: int) -> str:
        return "" if number == 0 else texts[versions[number].content_sha256]

    lines = unified_text_diff(
        text(from_no),
        text(to_no),
        _label(canonical, versions.get(from_no)),
        _label(canonical, versions.get(to_no)),
    )
    return VersionDiff(canonical, from_no, to_no, lines)


def _label(canonical: str, version: Version | None) -> str:
    if version is None:
        return f"{canonical} (nothing stored before version 1)"
    seen = version.first_seen.isoformat()
    return f"{canonical} version {version.version} ({version.kind}, {seen})"
