"""A small, known crawl history for the view and docs/sql.md tests, made through the API.

The clock starts 40 days before the real time (the views measure "last N days" from the
database's own clock); every event sits at least 12 hours from a window's edge.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from changewatch import ChangeWatch

from ._pages import long_page, one_word_edit, rewrite

if TYPE_CHECKING:
    from conftest import Clock

SHOP = "shop.example.com"
NEWS = "news.example.com"
STATIC = "static.example.com"
FLIP = f"https://{SHOP}/p/1"
MINOR = f"https://{SHOP}/p/2"
STEADY = f"https://{SHOP}/p/3"
ARTICLE = f"https://{NEWS}/a/1"
ABOUT = f"https://{STATIC}/about"
DAY = 86400.0

# (day after the start, URL, body): the whole history, in time order.
EVENTS: list[tuple[float, str, str]] = [
    (0, FLIP, rewrite(1)),  # A
    (0, MINOR, long_page(0)),
    (0, STEADY, long_page(7)),
    (0, ARTICLE, long_page(3)),
    (0, ABOUT, long_page(5)),
    (5, STEADY, long_page(7)),
    (9, FLIP, rewrite(2)),  # B: changed, 31 days before now
    (10, STEADY, long_page(7)),
    (20, FLIP, rewrite(1)),  # A again: reverted_to=1
    (25, STEADY, long_page(7)),
    (35, FLIP, rewrite(2)),  # B again: reverted_to=2
    (38, MINOR, one_word_edit(0)),  # minor
    (39, ABOUT, long_page(5)),
    (39.5, ARTICLE, rewrite(3)),  # changed, 12 hours before now
]

#: Expected per host, for the assertions.
EXPECTED_HOSTS: dict[str, dict[str, Any]] = {
    SHOP: {
        "pages": 3,
        "fetches": 10,
        "changes_ever": 4,
        "changes_last_1_day": 0,
        "changes_last_7_days": 2,
        "changes_last_30_days": 3,
        # gaps of FLIP: 9, 11, 15 days; of MINOR: 38 days → median (11 + 15) / 2 days
        "median_seconds_between_changes": 13 * DAY,
    },
    NEWS: {
        "pages": 1,
        "fetches": 2,
        "changes_ever": 1,
        "changes_last_1_day": 1,
        "changes_last_7_days": 1,
        "changes_last_30_days": 1,
        "median_seconds_between_changes": 39.5 * DAY,
    },
    STATIC: {
        "pages": 1,
        "fetches": 2,
        "changes_ever": 0,
        "changes_last_1_day": 0,
        "changes_last_7_days": 0,
        "changes_last_30_days": 0,
        "median_seconds_between_changes": None,
    },
}


def start_time() -> datetime:
    """40 days before now, to the whole second."""
    return (datetime.now(UTC) - timedelta(days=40)).replace(microsecond=0)


def populate(watch: ChangeWatch, clock: Clock) -> dict[str, Any]:
    """Replay :data:`EVENTS` through ``should_parse``; returns ``{url: [decision kinds]}``."""
    start = start_time()
    kinds: dict[str, list[Any]] = {}
    for day, url, body in EVENTS:
        clock.now = start + timedelta(days=day)
        decision = watch.should_parse(url, body)
        kinds.setdefault(url, []).append((decision.kind, decision.reverted_to))
    return kinds
