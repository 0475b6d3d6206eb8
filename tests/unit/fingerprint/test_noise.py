"""Learned noise per host (changewatch.fingerprint.noise): a flip-flopping banner is learned,
a real edit still shows, and nothing learned can hide prose (issue 20)."""

from __future__ import annotations

import itertools
import random

import pytest

from changewatch.fingerprint import Block, fingerprint
from changewatch.fingerprint.noise import NoiseRule, learn_noise, noise_observations

PAGES = 30
FETCHES = 20


def _page(index: int, *, banner: bool, views: int, edited: bool = False) -> str:
    """Page ``index`` of one host, without a main marker: a banner that comes and goes, a
    view counter and two paragraphs (the second edited by one sentence when ``edited``)."""
    extra = " The committee also approved a new park." if edited else ""
    return (
        "<html><body>"
        + ("<div class='promo'>We are hiring! Join us</div>" if banner else "")
        + f"<div><h1>Budget report {index}</h1>"
        f"<p>The council of district {index} met on Tuesday to discuss the revised budget "
        f"for the coming year.{extra}</p>"
        f"<p>Residents of district {index} asked questions about schools and roads.</p>"
        f"<div>{views:,} views</div></div></body></html>"
    )


def _fetches(seed: int) -> list[list[str]]:
    """FETCHES re-fetches of PAGES pages: the banner flips at random, the counter counts."""
    rng = random.Random(seed)
    return [
        [_page(i, banner=rng.random() < 0.5, views=100 * i + f * 7) for f in range(FETCHES)]
        for i in range(PAGES)
    ]


def _blocks(html: str, learned: frozenset[bytes] = frozenset()) -> tuple[Block, ...]:
    return fingerprint(html, with_blocks=True, volatile_blocks=learned).blocks


def _steps(fetches: list[list[str]]) -> list[tuple[tuple[Block, ...], tuple[Block, ...]]]:
    steps = []
    for page in fetches:
        blocks = [_blocks(html) for html in page]
        steps.extend(itertools.pairwise(blocks))
    return steps


def test_a_flip_flopping_banner_is_learned_and_a_real_edit_still_shows() -> None:
    """Over 20 re-fetches of 30 pages of one host the banner flips on and off and a counter
    counts: before learning most re-fetches look changed; once learned they are unchanged;
    a one-sentence edit of a paragraph is still a change; reset (nothing learned) brings the
    noise back."""
    fetches = _fetches(seed=1)
    changed_before = sum(
        fingerprint(a).content_sha256 != fingerprint(b).content_sha256
        for page in fetches
        for a, b in itertools.pairwise(page)
    )
    assert changed_before > PAGES * (FETCHES - 1) / 2
    learned = learn_noise(_steps(fetches))
    assert learned
    # New fetches of the same host, another draw of the banner.
    for page in _fetches(seed=2):
        hashes = {fingerprint(html, volatile_blocks=learned).content_sha256 for html in page}
        assert len(hashes) == 1
    for i in range(PAGES):
        before = _page(i, banner=True, views=5)
        after = _page(i, banner=False, views=6, edited=True)
        a = fingerprint(before, volatile_blocks=learned)
        b = fingerprint(after, volatile_blocks=learned)
        assert a.content_sha256 != b.content_sha256
    reset: frozenset[bytes] = frozenset()
    page = _fetches(seed=3)[0]
    assert len({fingerprint(html, volatile_blocks=reset).content_sha256 for html in page}) > 1


def test_prose_and_the_explicit_main_content_are_never_learned() -> None:
    """A paragraph that changes on every fetch is never learned (its steps are content
    changes), nor is a counter inside <main>."""
    steps = []
    for f in range(15):
        a = _blocks(f"<main><p>Story number {f} of the day, told at length here.</p>"
                    f"<div>{f} views</div></main>")  # fmt: skip
        b = _blocks(f"<main><p>Story number {f + 1} of the day, told at length here.</p>"
                    f"<div>{f + 1} views</div></main>")  # fmt: skip
        steps.append((a, b))
    assert learn_noise(steps, min_observations=1) == frozenset()
    quiet = [
        (_blocks(f"<main><p>Same story.</p><div>{f} views</div></main>"),
         _blocks(f"<main><p>Same story.</p><div>{f + 1} views</div></main>"))
        for f in range(15)
    ]  # fmt: skip
    assert learn_noise(quiet, min_observations=1) == frozenset()


def test_rules_need_enough_observations() -> None:
    """A block seen changing fewer times than min_observations is not learned yet."""
    steps = _steps(_fetches(seed=4))[:5]
    assert learn_noise(steps, min_observations=10) == frozenset()
    rules = noise_observations(steps)
    assert all(isinstance(r, NoiseRule) and r.changes <= r.observations for r in rules)
    with pytest.raises(ValueError, match="min_share"):
        learn_noise(steps, min_share=0)
