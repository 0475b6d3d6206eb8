"""The change-rate estimator, change probability and due ranking (changewatch.schedule)."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from changewatch.schedule import (
    DEFAULT_PRIOR_RATE_PER_DAY,
    change_probability,
    change_rate,
    due_in_days,
    rank_due,
)

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def _shrunk(inferred: float, days: float) -> float:
    """(X̂ + ½) / (T + ½): the prior of one change a day, weighted as half a change."""
    return (inferred + 0.5) / (days + 0.5)


@pytest.mark.parametrize(
    ("n", "x", "days", "expected"),
    [
        # X̂ = −10·ln((10 − 5 + 0.5) / 10.5) = 10·ln(10.5 / 5.5)
        (10, 5, 10.0, _shrunk(10 * math.log(10.5 / 5.5), 10.0)),
        # every fetch saw a change: X̂ = n·ln(2n + 1), finite
        (10, 10, 10.0, _shrunk(10 * math.log(21.0), 10.0)),
        (10, 5, 20.0, _shrunk(10 * math.log(10.5 / 5.5), 20.0)),
        # never changed: X̂ = 0, only the prior's half change
        (4, 0, 4.0, 0.5 / 4.5),
        (1, 1, 0.5, _shrunk(math.log(3.0), 0.5)),
        # X above n is capped at n
        (2, 5, 1.0, _shrunk(2 * math.log(5.0), 1.0)),
    ],
)
def test_change_rate_known_values(n: int, x: int, days: float, expected: float) -> None:
    """change_rate is Cho & Garcia-Molina's inferred changes plus the prior, worked by hand."""
    assert change_rate(n, x, days) == pytest.approx(expected, rel=1e-12)


def test_change_rate_prior_for_one_fetch() -> None:
    """A page fetched once gets the prior, whatever the span; a bad prior is refused."""
    assert change_rate(0, 0, 0.0) == DEFAULT_PRIOR_RATE_PER_DAY
    assert change_rate(0, 0, 5.0, prior=0.25) == 0.25
    with pytest.raises(ValueError, match="prior must be positive"):
        change_rate(1, 0, 1.0, prior=0.0)


@pytest.mark.parametrize("gap_s", [0.0, 0.5, 5.0, 60.0, 600.0, 3600.0, 86_400.0, 30 * 86_400.0])
def test_unchanged_refetch_never_outranks_a_page_fetched_once(gap_s: float) -> None:
    """Re-fetched unchanged seconds, minutes or days later, a page is never estimated above the
    prior of a page fetched once, so it can never rank above one fetched at the same time."""
    rate = change_rate(1, 0, gap_s / 86_400)
    if not gap_s:  # two fetches at one instant: nothing learnt, the prior
        assert rate == DEFAULT_PRIOR_RATE_PER_DAY
        return
    assert rate < DEFAULT_PRIOR_RATE_PER_DAY
    fetched = T0 + timedelta(seconds=gap_s)
    now = fetched + timedelta(days=1)
    ranked = rank_due(
        [("twice", b"a", "h", fetched, rate), ("once", b"b", "h", fetched, 1.0)], now, 2
    )
    assert [p.url for p in ranked] == ["once", "twice"]


@pytest.mark.parametrize(
    ("gap_s", "at_most"),
    [(0.5, 3.2), (60.0, 3.2), (3600.0, 3.0), (86_400.0, 1.1)],
)
def test_one_change_seen_soon_after_does_not_explode(gap_s: float, at_most: float) -> None:
    """A change seen on a re-fetch seconds apart moves the rate by a few changes a day, not
    tens of thousands (the half-day prior bounds what one interval can claim)."""
    rate = change_rate(1, 1, gap_s / 86_400)
    assert DEFAULT_PRIOR_RATE_PER_DAY < rate < at_most


@given(n=st.integers(1, 10_000), days=st.floats(0.0, 1e5, allow_nan=False))
def test_never_changed_is_at_most_the_prior(n: int, days: float) -> None:
    """However often and however fast a page is re-fetched unchanged, its rate stays ≤ prior."""
    assert change_rate(n, 0, days) <= DEFAULT_PRIOR_RATE_PER_DAY


def test_estimator_corrects_the_naive_rate_on_simulated_polling() -> None:
    """On Poisson pages polled daily, the estimator lands near the true rate; X/T falls short."""
    rng = random.Random(7)
    true_rate, n = 1.5, 20_000  # 1.5 changes a day, polled once a day
    x = sum(rng.random() < -math.expm1(-true_rate) for _ in range(n))
    assert change_rate(n, x, float(n)) == pytest.approx(true_rate, rel=0.03)
    assert x / n < 0.8 * true_rate  # the naive estimate misses the hidden changes


@given(
    n=st.integers(1, 10_000),
    x=st.integers(0, 10_000),
    days=st.floats(1e-6, 1e5, allow_nan=False),
)
def test_change_rate_is_positive_finite_and_grows_with_changes(n: int, x: int, days: float) -> None:
    """The rate is positive and finite, and more observed changes never lower it."""
    rate = change_rate(n, x, days)
    assert 0 < rate < math.inf
    assert change_rate(n, min(x + 1, n), days) >= rate


def test_probability_and_due_in_days_are_inverse() -> None:
    """P(change) reaches p exactly due_in_days(rate, p) after a fetch."""
    for rate in (0.01, 1.0, 24.0):
        for p in (0.1, 0.5, 0.9):
            assert change_probability(rate, due_in_days(rate, p)) == pytest.approx(p)
    assert change_probability(3.0, -1.0) == 0.0
    with pytest.raises(ValueError, match="probability"):
        due_in_days(1.0, 1.0)
    with pytest.raises(ValueError, match="rate_per_day"):
        due_in_days(0.0)


def test_rank_due_orders_by_probability_then_expected_changes() -> None:
    """rank_due puts the most likely changed first; saturated ties go to more expected changes."""
    now = T0 + timedelta(days=10)
    rows = [
        ("slow-old", b"1", "h", T0, 0.01),  # 0.1 expected
        ("fast-recent", b"2", "h", now - timedelta(hours=1), 2.0),  # ≈ 0.083
        ("fast-old", b"3", "h", T0, 50.0),  # 500: probability 1.0
        ("faster-old", b"4", "h", T0, 80.0),  # 800: probability 1.0 too
        ("future", b"5", "h", now + timedelta(days=1), 5.0),  # not elapsed: 0
    ]
    ranked = rank_due(rows, now, 10)
    order = ["faster-old", "fast-old", "slow-old", "fast-recent", "future"]
    assert [p.url for p in ranked] == order
    assert ranked[2].probability == pytest.approx(-math.expm1(-0.1))
    assert ranked[2].expected_changes == pytest.approx(0.1)
    assert ranked[-1].probability == 0.0
    assert [p.url for p in rank_due(rows, now, 2)] == ["faster-old", "fast-old"]
    assert rank_due(rows, now, 0) == []
