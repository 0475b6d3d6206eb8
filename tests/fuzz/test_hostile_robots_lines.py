"""robots.txt shapes a site controls: reading its Sitemap: lines costs time linear in its size."""

from __future__ import annotations

from changewatch.sitemaps.robots import ROBOTS_MAX_BYTES, robots_sitemaps

from ._timing import assert_linear

BASE = "https://x.org/robots.txt"


def _distinct(n: int) -> bytes:
    return b"".join(b"Sitemap: /s%d.xml\n" % i for i in range(n))


def test_many_distinct_sitemap_lines_cost_linear_time() -> None:
    """n distinct Sitemap: lines cost O(n), not O(n²) for the repeat check.

    From 3,000 lines: below that a line's URL checks (about 25 µs) hide a list's repeat check.
    """
    assert_linear(
        lambda body: robots_sitemaps(body, BASE), _distinct, label="distinct sitemaps", start=3000
    )


def test_many_sitemap_lines_keep_first_appearance_order_without_repeats() -> None:
    """24,000 lines (a robots.txt just under the read cap) give each URL once, in file order."""
    body = _distinct(24_000) + b"Sitemap: /s5.xml\nSitemap: https://x.org/s0.xml\n"
    assert len(body) < ROBOTS_MAX_BYTES
    assert robots_sitemaps(body, BASE) == [f"https://x.org/s{i}.xml" for i in range(24_000)]
