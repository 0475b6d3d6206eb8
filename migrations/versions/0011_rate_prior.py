"""Change-rate estimates shrunk towards the prior; every stored estimate recomputed.

The estimate of migration 0005 divided by the mean fetch interval, so two fetches of an
unchanged page half a second apart gave it tens of thousands of changes a day, above every page
fetched once. It is now ``(X̂ + 0.5) / (T + 0.5)`` per day — Cho and Garcia-Molina's inferred
changes ``X̂ = −n·ln((n − X + 0.5) / (n + 0.5))`` (0 when ``X = 0``) plus a prior of one change a
day weighted as half a change, over the observed span ``T`` in days — and 1 for a page fetched
once. This revision recomputes ``change_rate``, ``rate_band`` and ``due_at`` of every row with
the new formula (the downgrade with the old one), and on Postgres corrects the comments of
``page_snapshots.change_rate`` and ``page_latest.changes_per_day`` (the latter said NULL before
a second fetch; it is 1).

The SQL is written out here, per dialect, as it ran: it does not follow later changes to
``changewatch.store.rates``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

#: Per dialect: days between two timestamps, the smaller / larger of two numbers, and a
#: timestamp plus a number of days (SQLite keeps UTC text with microseconds).
_SQL = {
    "postgresql": {
        "days": "(CAST(EXTRACT(EPOCH FROM ({b} - {a})) AS DOUBLE PRECISION) / 86400.0)",
        "least": "LEAST({a}, {b})",
        "greatest": "GREATEST({a}, {b})",
        "add_days": "({ts} + ({days}) * INTERVAL '1 day')",
        "float": "DOUBLE PRECISION",
    },
    "sqlite": {
        "days": "(julianday({b}) - julianday({a}))",
        "least": "MIN({a}, {b})",
        "greatest": "MAX({a}, {b})",
        "add_days": "(strftime('%Y-%m-%d %H:%M:%f', julianday({ts}) + ({days})) || '000')",
        "float": "REAL",
    },
}

_NEW_RATE = """
CASE WHEN fetch_count <= 1 THEN 1.0 ELSE
  ((CASE WHEN change_count <= 0 THEN 0.0 ELSE
     -{n} * ln(({n} - {least_x} + 0.5) / ({n} + 0.5)) END) + 0.5)
  / ({greatest_days} + 0.5)
END"""

_OLD_RATE = """
CASE WHEN fetch_count <= 1 OR {days} <= 0 THEN 1.0 ELSE
  -ln(({n} - {least_x_half} + 0.5) / ({n} + 0.5)) * {n} / {days}
END"""

#: ln 2: the expected changes at which a page falls due (probability 0.5).
_LN2 = "0.6931471805599453"

_COMMENTS_NEW = {
    "page_snapshots.change_rate": "estimated changes per day (Cho & Garcia-Molina, shrunk "
    "towards a prior of 1 a day), updated on every fetch; 1 after one fetch",
    "page_latest.changes_per_day": "estimated changes per day (Cho & Garcia-Molina, shrunk "
    "towards a prior of 1 a day), updated on every fetch; 1 (the prior) after one fetch",
}
_COMMENTS_OLD = {
    "page_snapshots.change_rate": "estimated changes per day (Cho & Garcia-Molina), "
    "updated on every fetch",
    "page_latest.changes_per_day": "estimated changes per day (Cho & Garcia-Molina), "
    "updated on every fetch; NULL before a second fetch",
}


def _recompute(dialect: str, formula: str) -> None:
    sql = _SQL[dialect]
    n = f"CAST(fetch_count - 1 AS {sql['float']})"
    x = f"CAST(change_count AS {sql['float']})"
    days = sql["days"].format(a="first_seen", b="last_seen")
    rate = formula.format(
        n=n,
        days=days,
        least_x=sql["least"].format(a=x, b=n),
        least_x_half=sql["least"].format(
            a=f"CASE WHEN change_count <= 0 THEN 0.5 ELSE {x} END", b=n
        ),
        greatest_days=sql["greatest"].format(a=days, b="0.0"),
    )
    op.execute(f"UPDATE page_snapshots SET change_rate = {rate}")
    band = "floor(2.0 * ln(change_rate) / ln(2.0))"
    op.execute(
        "UPDATE page_snapshots SET "
        f"due_at = {sql['add_days'].format(ts='last_seen', days=f'{_LN2} / change_rate')}, "
        f"rate_band = CAST(CASE WHEN {band} < -40 THEN -40 WHEN {band} > 40 THEN 40 "
        f"ELSE {band} END AS SMALLINT)"
    )


def _comment(dialect: str, comments: dict[str, str]) -> None:
    if dialect != "postgresql":
        return  # SQLite keeps no comments
    for target, text in comments.items():
        quoted = text.replace("'", "''")
        op.execute(f"COMMENT ON COLUMN {target} IS '{quoted}'")


def upgrade() -> None:
    """Recompute every estimate with the prior; correct the two comments (Postgres)."""
    dialect = op.get_bind().dialect.name
    _recompute(dialect, _NEW_RATE)
    _comment(dialect, _COMMENTS_NEW)


def downgrade() -> None:
    """Recompute every estimate as migration 0005 did; restore the old comments (Postgres)."""
    dialect = op.get_bind().dialect.name
    _recompute(dialect, _OLD_RATE)
    _comment(dialect, _COMMENTS_OLD)
