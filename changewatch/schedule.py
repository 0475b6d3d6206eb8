"""Recrawl scheduling maths: a page's change rate from its fetch history, and what is due.

Pure: values in, values out; ``now`` is always passed in.

A page is modelled as a Poisson process of changes with an unknown rate ``r`` (changes per
day). A crawler does not see the changes, only, at each fetch, whether *anything* changed
since the fetch before. The naive estimate ``X / T`` (changes seen over time observed)
therefore undercounts: two or more changes between two fetches look like one. Cho and
Garcia-Molina ("Estimating frequency of change", ACM TOIT 3(3), 2003, §4) give, for ``n``
fetches at a regular interval ``I`` of which ``X`` saw a change, the estimator

    r̂ = −ln((n − X + 0.5) / (n + 0.5)) / I

which corrects for the hidden changes (it follows from P(change in I) = 1 − e^(−rI)) and,
thanks to the 0.5 terms, stays finite when every fetch saw a change (X = n) and has a
smaller bias than the plain maximum-likelihood −ln(1 − X/n) / I. changewatch keeps
``n`` (fetch intervals: ``fetch_count − 1``), ``X`` (``change_count``) and the observed span
(``last_seen − first_seen``, so ``I = span / n``) on every snapshot row, so the estimate costs
no history scan. Its limit: the formula assumes regular polling. With irregular intervals it
is a mean-interval approximation (long gaps are under-weighted); docs/scheduling.md says more.

A prior, because the estimator alone misleads in two cases: a page fetched once (``n = 0``)
has no estimate, and a page fetched twice seconds apart has a tiny ``I``, so one change — or,
with the continuity correction, none — reads as tens of thousands of changes a day. The
estimate is therefore shrunk towards :data:`DEFAULT_PRIOR_RATE_PER_DAY` the way a Gamma prior
shrinks a Poisson rate (posterior mean ``(α + k) / (β + T)``): the prior counts as
:data:`PRIOR_CHANGES` changes seen over ``PRIOR_CHANGES / prior`` days (half a change in half a
day), and the changes Cho and Garcia-Molina's estimator infers, ``X̂ = r̂·T =
−n·ln((n − X + 0.5)/(n + 0.5))``, are added to it:

    r = (X̂ + ½) / (T + ½ / prior)

So a page fetched once gets the prior; a page never seen to change (``X = 0``, so ``X̂ = 0``)
gets ``½ / (T + ½)`` — below the prior as soon as any time has passed, falling like ``≈ 0.5 /
T`` (the longer a page is seen unchanged, the more rarely it is re-checked, but never never);
re-fetches seconds apart move the estimate by at most a few changes a day; and after days of
observation the prior's half change is noise beside the data.

The probability that a page changed since its last fetch is ``1 − e^(−r̂·Δt)``. Ordering by
it is ordering by ``r̂·Δt``, which no single index can serve for every ``now``; so each row
also stores its :func:`rate_band` (rates within a factor √2 share a band), under which
``last_seen`` order *is* the order of ``r̂·Δt`` to within that factor — see
:mod:`changewatch.store.schedule`. ``due_at``, the time the probability reaches
:data:`DUE_PROBABILITY`, is stored too, for people querying the table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = [
    "DAY_S",
    "DEFAULT_PRIOR_RATE_PER_DAY",
    "DUE_PROBABILITY",
    "PRIOR_CHANGES",
    "RATE_BAND_FACTOR",
    "DuePage",
    "change_probability",
    "change_rate",
    "due_in_days",
    "inferred_changes",
    "parse_duration",
    "rank_due",
    "rate_band",
]

#: Seconds in a day: rates are per day.
DAY_S = 86_400.0
#: The rate given to a page fetched only once: about one change a day, so a new page is
#: checked again after ln 2 days ≈ 17 hours.
DEFAULT_PRIOR_RATE_PER_DAY = 1.0
#: ``due_at`` is when the probability of a change since the last fetch reaches this.
DUE_PROBABILITY = 0.5
#: The weight of the prior, in changes: it counts as this many changes seen over
#: ``PRIOR_CHANGES / prior`` days (see the module docstring).
PRIOR_CHANGES = 0.5
#: Rate bands per doubling of the rate: a band spans a factor 2 ** (1 / 2) ≈ 1.41.
RATE_BANDS_PER_DOUBLING = 2
#: The ratio of the highest to the lowest rate of a band.
RATE_BAND_FACTOR = 2 ** (1 / RATE_BANDS_PER_DOUBLING)
#: Bands outside these are clamped (rates from 2**-20 ≈ 1e-6 to 2**20 ≈ 1e6 per day).
MIN_RATE_BAND, MAX_RATE_BAND = -40, 40


def inferred_changes(intervals: int, changes: int) -> float:
    """Changes a page made over ``n = intervals`` fetch intervals, ``X = changes`` of which saw
    one: Cho & Garcia-Molina's ``X̂ = −n·ln((n − X + 0.5) / (n + 0.5))`` (``X`` capped at ``n``),
    more than ``X`` because an interval that saw a change may have held several.

    >>> round(inferred_changes(10, 5), 4), inferred_changes(10, 0), inferred_changes(0, 0)
    (6.4663, 0.0, 0.0)
    """
    if intervals <= 0 or changes <= 0:
        return 0.0
    n, x = float(intervals), float(min(changes, intervals))
    return -n * math.log((n - x + 0.5) / (n + 0.5))


def change_rate(
    intervals: int,
    changes: int,
    observed_days: float,
    prior: float = DEFAULT_PRIOR_RATE_PER_DAY,
) -> float:
    """A page's change rate in changes per day: r = (X̂ + ½) / (T + ½ / prior).

    ``X̂`` is :func:`inferred_changes` of ``n = intervals`` (fetches after the first) and
    ``X = changes`` (fetches that saw a change); ``T = observed_days`` (negative counts as 0);
    the half change over ``½ / prior`` days is the prior (see the module docstring). A page
    fetched once (``n ≤ 0``) gets ``prior``; a page never seen to change never gets more.

    >>> round(change_rate(10, 5, 10.0), 4)    # half the daily fetches saw a change
    0.6635
    >>> round(5 / 10.0, 4)                    # the naive X/T, biased low
    0.5
    >>> round(change_rate(10, 10, 10.0), 4)   # every fetch saw one: large but finite
    2.9472
    >>> change_rate(0, 0, 0.0)                # one fetch: the prior
    1.0
    >>> change_rate(1, 0, 0.5 / 86_400) < 1.0     # unchanged, re-fetched 0.5 s later
    True
    >>> round(change_rate(1, 1, 60 / 86_400), 4)    # changed within a minute
    3.1928
    """
    if prior <= 0:
        raise ValueError(f"prior must be positive, got {prior!r}")
    if intervals <= 0:
        return prior
    pseudo_days = PRIOR_CHANGES / prior
    return (inferred_changes(intervals, changes) + PRIOR_CHANGES) / (
        max(observed_days, 0.0) + pseudo_days
    )


def change_probability(rate_per_day: float, elapsed_days: float) -> float:
    """P(at least one change in ``elapsed_days``) for a Poisson rate: 1 − e^(−r·Δt).

    >>> round(change_probability(1.0, math.log(2)), 6)
    0.5
    >>> change_probability(2.0, 0.0)
    0.0
    """
    return -math.expm1(-rate_per_day * max(elapsed_days, 0.0))


def due_in_days(rate_per_day: float, probability: float = DUE_PROBABILITY) -> float:
    """Days after a fetch until the change probability reaches ``probability``: −ln(1 − p)/r.

    >>> round(due_in_days(1.0), 6) == round(math.log(2), 6)
    True
    """
    if not 0 < probability < 1:
        raise ValueError(f"probability must be between 0 and 1, got {probability!r}")
    if rate_per_day <= 0:
        raise ValueError(f"rate_per_day must be positive, got {rate_per_day!r}")
    return -math.log1p(-probability) / rate_per_day


def rate_band(rate_per_day: float) -> int:
    """The band of a rate: ``floor(2·log2 r)``, clamped to ``MIN_RATE_BAND..MAX_RATE_BAND``.

    Rates in band ``b`` lie in ``[2**(b/2), 2**((b+1)/2))`` changes per day.

    >>> rate_band(1.0), rate_band(1.4), rate_band(1.5), rate_band(0.5), rate_band(0.0)
    (0, 0, 1, -2, -40)
    """
    if rate_per_day <= 0:
        return MIN_RATE_BAND
    # The same arithmetic as the SQL in changewatch.store.rates, so both give the same band.
    band = math.floor(RATE_BANDS_PER_DOUBLING * math.log(rate_per_day) / math.log(2.0))
    return min(max(band, MIN_RATE_BAND), MAX_RATE_BAND)


@dataclass(frozen=True, slots=True)
class DuePage:
    """A page worth fetching again, with the estimate behind it.

    ``url`` is ``None`` under the ``none`` URL-storage policy (use ``url_digest``);
    ``rate_per_day`` is the estimated change rate, ``probability`` the chance it changed
    since ``last_seen`` and ``expected_changes`` = rate × days since ``last_seen``.
    """

    url: str | None
    url_digest: bytes
    host: str
    last_seen: datetime
    rate_per_day: float
    probability: float
    expected_changes: float


def rank_due(
    candidates: Iterable[tuple[str | None, bytes, str, datetime, float]],
    now: datetime,
    limit: int,
) -> list[DuePage]:
    """The ``limit`` candidates ``(url, digest, host, last_seen, rate)`` most likely changed.

    Ties (equal probability, e.g. several at 1.0) go to the larger expected change count,
    then the older ``last_seen``, then the smaller digest, so the order is deterministic.

    >>> from datetime import UTC
    >>> t = datetime(2026, 1, 2, tzinfo=UTC)
    >>> rows = [("a", b"a", "h", t - timedelta(days=1), 0.1), ("b", b"b", "h", t, 5.0),
    ...         ("c", b"c", "h", t - timedelta(days=1), 2.0)]
    >>> [p.url for p in rank_due(rows, t, 2)]
    ['c', 'a']
    """
    pages = []
    for url, digest, host, last_seen, rate in candidates:
        elapsed = (now - last_seen) / timedelta(days=1)
        expected = rate * max(elapsed, 0.0)
        pages.append(
            DuePage(url, digest, host, last_seen, rate, change_probability(rate, elapsed), expected)
        )
    pages.sort(key=lambda p: (-p.probability, -p.expected_changes, p.last_seen, p.url_digest))
    return pages[: max(limit, 0)]


_DURATION_PART = re.compile(r"(\d+)\s*([smhdw])")
_DURATION_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(text: str, *, positive: bool = False) -> timedelta:
    """A duration written as numbers with units ``s``, ``m``, ``h``, ``d`` or ``w``: ``30d``,
    ``12h``, ``1w2d``, ``1h30m``, ``45s`` (the one grammar of every duration option).

    ``ValueError`` naming the text if it is not one, or (``positive``) if it is zero.

    >>> parse_duration("1d12h"), parse_duration("1w")
    (datetime.timedelta(days=1, seconds=43200), datetime.timedelta(days=7))
    >>> parse_duration("0s")
    datetime.timedelta(0)
    """
    compact = text.strip().lower()
    if not compact or _DURATION_PART.sub("", compact).strip():
        raise ValueError(
            f"duration {text!r} is not understood: use numbers with units s, m, h, d or w, "
            "e.g. 30m, 6h, 30d or 1d12h"
        )
    seconds = sum(int(n) * _DURATION_UNITS_S[u] for n, u in _DURATION_PART.findall(compact))
    if positive and seconds <= 0:
        raise ValueError(f"duration {text!r} must be longer than zero")
    return timedelta(seconds=seconds)
