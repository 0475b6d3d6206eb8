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


@pytest.mark.parametrize(
    ("n", "x", "days", "expected"),
    [
        # −ln((10 − 5 + 0.5) / 10.5) / 1 = ln(10.5 / 5.5)
        (10, 5, 10.0, math.log(10.5 / 5.5)),
        # every fetch saw a change: ln(2n + 1) / I, finite
        (10, 10, 10.0, math.log(21.0)),
        # I = 2 days halves the rate
        (10, 5, 20.0, math.log(10.5 / 5.5) / 2),
        # never changed: X counts as 0.5 → ln((n + 0.5) / n) / I
        (4, 0, 4.0, math.log(4.5 / 4.0)),
        (1, 1, 0.5, math.log(3.0) / 0.5),
    ],
)
def test_change_rate_known_values(n: int, x: int, days: float, expected: float) -> None:
    """change_rate equals Cho & Garcia-Molina's formula, worked by hand."""
    assert change_rate(n, x, days) == pytest.approx(expected, rel=1e-12)


def test_change_rate_prior_without_an_interval() -> None:
    """A page fetched once, or with no time elapsed, gets the prior."""
    assert change_rate(0, 0, 0.0) == DEFAULT_PRIOR_RATE_PER_DAY
    assert change_rate(3, 1, 0.0) == DEFAULT_PRIOR_RATE_PER_DAY
    assert change_rate(0, 0, 5.0, prior=0.25) == 0.25


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
