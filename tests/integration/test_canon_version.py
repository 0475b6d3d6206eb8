"""canon_version in the store: written per row, a policy change detected on open and in stats."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from changewatch import ChangeWatch
from changewatch.errors import CanonVersionMismatchError, ConfigError
from changewatch.store.tables import page_snapshots
from changewatch.urls import CANON_RULES_VERSION, CanonPolicy, HostPolicy, canon_version

FOLD = CanonPolicy(default=HostPolicy(fold_trailing_slash=True))
PAGE = "<html><body><p>a page about harbours and lanterns</p></body></html>"


def _stored_versions(watch: ChangeWatch) -> list[int]:
    with watch.store.engine.connect() as conn:
        return list(conn.execute(sa.select(page_snapshots.c.canon_version)).scalars())


def test_rows_carry_the_policy_canon_version(make_watch: Callable[..., ChangeWatch]) -> None:
    """Each snapshot row stores the canon_version of the rules and policy that keyed it."""
    watch = make_watch(canon_policy=FOLD)
    decision = watch.should_parse("http://example.com/a/", PAGE)
    assert decision.url == "http://example.com/a"
    assert _stored_versions(watch) == [canon_version(FOLD)]
    assert watch.canon_version == canon_version(FOLD) != CANON_RULES_VERSION
    assert watch.history("http://EXAMPLE.com/a/")[0].kind == "new"


def test_policy_change_without_rekeying_is_refused(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Opening a store keyed under other rules raises CanonVersionMismatchError with the data."""
    make_watch().should_parse("http://example.com/a/", PAGE)
    with pytest.raises(CanonVersionMismatchError) as info:
        make_watch(canon_policy=FOLD)
    error = info.value
    assert isinstance(error, ConfigError)
    assert error.expected == canon_version(FOLD)
    assert error.found == {CANON_RULES_VERSION: 1}
    assert "allow_mixed_canon" in str(error)
    make_watch().close()  # the same rules again: no complaint


def test_mixing_knowingly_warns_and_stats_report_it(
    make_watch: Callable[..., ChangeWatch], caplog: pytest.LogCaptureFixture
) -> None:
    """allow_mixed_canon=True logs a warning; stats count rows per canon_version exactly."""
    first = make_watch()
    first.should_parse("http://example.com/a/", PAGE)
    assert first.stats()["canon_mismatch"] is False
    with caplog.at_level(logging.WARNING, logger="changewatch"):
        mixed = make_watch(canon_policy=FOLD, allow_mixed_canon=True)
    assert "canon_version" in caplog.text
    mixed.should_parse("http://example.com/b/", PAGE)
    stats = mixed.stats()
    assert stats["canon_version"] == canon_version(FOLD)
    assert stats["canon_versions"] == {
        str(CANON_RULES_VERSION): 1,
        str(canon_version(FOLD)): 1,
    }
    assert stats["canon_mismatch"] is True


def test_from_env_reads_the_policy_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ChangeWatch.from_env() loads CHANGEWATCH_CANON_POLICY and canonicalises with it."""
    policy_file = tmp_path / "canon.toml"
    policy_file.write_text("fold_trailing_slash = true\n", encoding="utf-8")
    monkeypatch.setenv("CHANGEWATCH_CANON_POLICY", str(policy_file))
    monkeypatch.setenv("CHANGEWATCH_DATABASE_URL", f"sqlite:///{tmp_path / 'cw.db'}")
    monkeypatch.setenv("CHANGEWATCH_SEEN_URL", "memory:")
    with ChangeWatch.from_env() as watch:
        assert watch.canon_policy == FOLD
        assert watch.mark_seen("http://example.com/a/") is True
        assert watch.mark_seen("http://example.com/a") is False
        assert watch.should_parse("http://example.com/a/", PAGE).url == "http://example.com/a"
        assert _stored_versions(watch) == [canon_version(FOLD)]
