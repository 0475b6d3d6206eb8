"""The change-rate estimate and ``due_at`` as SQL expressions, written with every snapshot write.

These mirror :func:`changewatch.schedule.change_rate` and :func:`changewatch.schedule.due_in_days`
exactly (a test compares them on both dialects), so the fast path — one ``UPDATE`` — keeps the
estimate current without reading the row first. The ``SET`` expressions of an ``UPDATE`` see
the row's *old* values on SQLite and Postgres alike, which is why the counts are adjusted here.

Date arithmetic differs per dialect, so two small constructs compile differently:
``julianday`` on SQLite (its timestamps are ``YYYY-MM-DD HH:MM:SS.ffffff`` text), ``EXTRACT``
and ``interval`` on Postgres.
"""

from __future__ import annotations

import math
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.functions import FunctionElement

from changewatch.schedule import (
    DEFAULT_PRIOR_RATE_PER_DAY,
    DUE_PROBABILITY,
    MAX_RATE_BAND,
    MIN_RATE_BAND,
    PRIOR_CHANGES,
    RATE_BANDS_PER_DOUBLING,
)
from changewatch.store.tables import UTCDateTime, page_snapshots

__all__ = ["AddDays", "DaysBetween", "band_expr", "rate_expr", "schedule_values"]

_SNAP = page_snapshots.c
#: −ln(1 − DUE_PROBABILITY): the expected changes at which a page falls due.
_DUE_EXPECTED = -math.log1p(-DUE_PROBABILITY)


class DaysBetween(FunctionElement[float]):
    """``end − start`` in days, as a float."""

    type = sa.Float()
    inherit_cache = True


@compiles(DaysBetween, "sqlite")
def _days_sqlite(element: DaysBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = list(element.clauses)
    end_sql, start_sql = compiler.process(end, **kw), compiler.process(start, **kw)
    return f"(julianday({end_sql}) - julianday({start_sql}))"


@compiles(DaysBetween, "postgresql")
def _days_postgres(element: DaysBetween, compiler: SQLCompiler, **kw: Any) -> str:
    start, end = list(element.clauses)
    return (
        f"(CAST(EXTRACT(EPOCH FROM ({compiler.process(end, **kw)} - "
        f"{compiler.process(start, **kw)})) AS DOUBLE PRECISION) / 86400.0)"
    )


class _Extreme(FunctionElement[Any]):
    """The larger (:class:`Greatest`) or smaller (:class:`Least`) of two non-NULL values:
    ``greatest``/``least`` on Postgres, the two-argument ``max``/``min`` on SQLite. Each
    argument is written once, where a ``CASE`` repeats one (the schedule's rate expression
    is long, and Postgres builds every expression of a statement anew at each execution:
    about 20 µs a thousand characters of the touch's SQL, measured)."""

    inherit_cache = True


class Greatest(_Extreme):
    type = sa.Float()
    inherit_cache = True


class Least(_Extreme):
    type = sa.Float()
    inherit_cache = True


def _extreme(name: str) -> Any:
    def compile_(element: _Extreme, compiler: SQLCompiler, **kw: Any) -> str:
        return f"{name}({compiler.process(element.clauses, **kw)})"

    return compile_


compiles(Greatest, "postgresql")(_extreme("greatest"))
compiles(Greatest, "sqlite")(_extreme("max"))
compiles(Least, "postgresql")(_extreme("least"))
compiles(Least, "sqlite")(_extreme("min"))


class AddDays(FunctionElement[Any]):
    """``timestamp + days`` (a float), as a timestamp of the column's type."""

    type = UTCDateTime()
    inherit_cache = True


@compiles(AddDays, "sqlite")
def _add_sqlite(element: AddDays, compiler: SQLCompiler, **kw: Any) -> str:
    when, days = list(element.clauses)
    # %f is seconds with milliseconds; pad to the microseconds SQLAlchemy writes.
    return (
        f"(strftime('%Y-%m-%d %H:%M:%f', julianday({compiler.process(when, **kw)}) + "
        f"({compiler.process(days, **kw)})) || '000')"
    )


@compiles(AddDays, "postgresql")
def _add_postgres(element: AddDays, compiler: SQLCompiler, **kw: Any) -> str:
    when, days = list(element.clauses)
    return f"({compiler.process(when, **kw)} + ({compiler.process(days, **kw)}) * INTERVAL '1 day')"


def rate_expr(
    intervals: ColumnElement[Any],
    changes: ColumnElement[Any],
    first_seen: ColumnElement[Any],
    now: ColumnElement[Any],
) -> ColumnElement[float]:
    """SQL for :func:`changewatch.schedule.change_rate`: (X̂ + ½) / (T + ½ / prior)."""
    n = sa.cast(intervals, sa.Float)
    x = sa.cast(Least(changes, intervals), sa.Float)  # X̂ is defined for X ≤ n
    inferred = sa.case(
        (sa.or_(intervals <= 0, changes <= 0), sa.literal(0.0)),
        else_=-n * sa.func.ln((n - x + 0.5) / (n + 0.5)),
    )
    observed = Greatest(DaysBetween(first_seen, now), sa.literal(0.0))
    pseudo_days = PRIOR_CHANGES / DEFAULT_PRIOR_RATE_PER_DAY
    estimate = (inferred + sa.literal(PRIOR_CHANGES)) / (observed + sa.literal(pseudo_days))
    return sa.case((intervals <= 0, sa.literal(DEFAULT_PRIOR_RATE_PER_DAY)), else_=estimate)


def band_expr(rate: ColumnElement[Any]) -> ColumnElement[int]:
    """SQL for :func:`changewatch.schedule.rate_band` of a (positive) rate expression."""
    # Both operands of the division typed Float: a function of no type makes SQLAlchemy cast
    # the divisor to NUMERIC on Postgres, whose 15 digits of ln 2 put a rate of exactly 0.5
    # a day in band -3 where Python says -2 (2 ln 0.5 / ln 2 = -2.000000000000001).
    raw = sa.func.floor(
        sa.literal(float(RATE_BANDS_PER_DOUBLING))
        * sa.func.ln(rate, type_=sa.Float)
        / sa.func.ln(2.0, type_=sa.Float)
    )
    clamped = Least(
        Greatest(raw, sa.literal(float(MIN_RATE_BAND))), sa.literal(float(MAX_RATE_BAND))
    )
    return sa.cast(clamped, sa.SmallInteger)


def schedule_values(now: ColumnElement[Any], *, changed: bool) -> dict[str, Any]:
    """``SET`` values of an ``UPDATE`` of one fetch: counts, rate and ``due_at`` after it.

    ``changed`` says whether this fetch saw a change (if not, ``change_count`` is left
    alone).
    """
    changes: ColumnElement[Any] = _SNAP.change_count + 1 if changed else _SNAP.change_count
    # After this fetch there are fetch_count (old) intervals.
    rate = rate_expr(_SNAP.fetch_count, changes, _SNAP.first_seen, now)
    values: dict[str, Any] = {
        "change_rate": rate,
        "due_at": AddDays(now, sa.literal(_DUE_EXPECTED) / rate),
        "rate_band": band_expr(rate),
    }
    if changed:
        values["change_count"] = changes
    return values
