"""Learned noise per host (issue 20): a block that flips on most re-fetches of a host's
pages while their prose stays is learned, stored in host_noise, and left out of the hashes;
prose and the explicit main content never are; reset forgets it. On both dialects."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

from changewatch import ChangeWatch

HOST = "noise.example"
URLS = [f"https://{HOST}/policies/{i}" for i in range(30)]
SENTENCE = " Since March we also keep encrypted backups of it for one year."


def _page(i: int, banner: bool, *, extra: str = "", inside_main: bool = False) -> str:
    flag = "<div class='promo'>We are hiring!</div>" if banner else ""
    body = (
        f"<div><h1>Policy {i}</h1><p>This policy explains how document {i} handles your "
        f"data and why we keep it for thirty days.{extra}</p></div>"
    )
    if inside_main:
        return f"<html><body><main>{flag}{body}</main></body></html>"
    return f"<html><head><title>Doc {i}</title></head><body>{flag}{body}</body></html>"


def _rounds(watch: ChangeWatch, rounds: int, *, inside_main: bool = False) -> list[Counter[str]]:
    """Fetch the 30 pages ``rounds`` times, one batch a round, the banner on every other
    round; the decision kinds of each round."""
    out = []
    for n in range(rounds):
        batch = [(url, _page(i, n % 2 == 1, inside_main=inside_main)) for i, url in enumerate(URLS)]
        out.append(Counter(d.kind for d in watch.should_parse_many(batch)))
    return out


def test_a_flipping_banner_is_learned_and_a_sentence_edit_still_counts(
    make_watch: Callable[..., ChangeWatch], tmp_path: Path
) -> None:
    """Without learning every flip of the banner is a change; with it, the banner's shape is
    learned from the first re-fetch round (30 observations, 10 needed), the pages stored with
    the banner change back once, and every fetch of the 17 last rounds is unchanged, while a
    one-sentence edit is still changed. Reset forgets it."""
    plain = _rounds(make_watch(database_url=f"sqlite:///{tmp_path}/plain.db"), 4)
    assert [r["changed"] for r in plain] == [0, 30, 30, 30]
    watch = make_watch(learn_noise=True)
    rounds = _rounds(watch, 20)
    assert rounds[0] == Counter({"new": 30})
    assert rounds[1] == Counter({"changed": 30})  # learned at the end of this batch
    assert rounds[2] == Counter({"changed": 30})  # stored with the banner: back, once
    assert all(r == Counter({"unchanged": 30}) for r in rounds[3:]), rounds
    rules = watch.noise_rules(HOST)
    learned = [r for r in rules if r["learned_at"] is not None]
    assert [(r["kind"], r["path"]) for r in learned] == [("shape", "html/body/div")]
    assert learned[0]["observations"] >= 10
    assert learned[0]["changes"] == learned[0]["observations"]
    edited = watch.should_parse(URLS[0], _page(0, True, extra=SENTENCE))
    assert edited.kind == "changed"
    assert watch.reset_noise(HOST) == len(rules)
    assert watch.noise_rules(HOST) == []
    again = [watch.should_parse(URLS[1], _page(1, on)).kind for on in (False, True, False)]
    assert again == ["unchanged", "changed", "changed"]  # the banner counts again


def test_learned_noise_never_hides_the_explicit_main_content(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """The same banner inside <main>: never learnable, so every flip stays a change."""
    watch = make_watch(learn_noise=True)
    rounds = _rounds(watch, 12, inside_main=True)
    assert all(r == Counter({"changed": 30}) for r in rounds[1:])
    assert [r for r in watch.noise_rules(HOST) if r["learned_at"] is not None] == []


def test_rules_are_per_host_and_per_fingerprint_version(
    make_watch: Callable[..., ChangeWatch],
) -> None:
    """Rules learned on one host are not used on another; the store keeps their version."""
    watch = make_watch(learn_noise=True)
    _rounds(watch, 3)
    assert {r["fingerprint_version"] for r in watch.noise_rules(HOST)} == {4}
    other = "https://other.example/policies/0"
    kinds = [watch.should_parse(other, _page(0, on)).kind for on in (False, True, False)]
    assert kinds == ["new", "changed", "changed"]
    assert watch.noise_rules("other.example") != []
    assert all(r["learned_at"] is None for r in watch.noise_rules("other.example"))
