"""The observer hook: what :class:`~changewatch.watch.ChangeWatch` tells the outside world.

``ChangeWatch(observer=...)`` calls an :class:`Observer` after each ``should_parse`` /
``should_parse_many`` (the decisions and the seconds the call took), after each
``mark_seen`` / ``mark_seen_many`` (how many URLs were new, of how many) and when the store or
the seen-set fails. The default observer does nothing. :mod:`changewatch.metrics` turns the
calls into Prometheus metrics, so the core never imports ``prometheus_client``; an observer
of your own (statsd, OpenTelemetry, a test recorder) subclasses :class:`Observer` and
overrides what it needs.

Observers are called on the caller's thread, after the work is done, and must not raise:
an exception from an observer propagates to the caller of ``should_parse``.

The same wrappers write the structured decision log: one DEBUG line per decision on the
``changewatch.decisions`` logger, with the fields ``kind``, ``path``, ``digest`` (the URL
digest, hex), ``distance``, ``ms`` (the call's duration) and ``url`` as the URL-storage policy
allows it (:func:`loggable_url`), passed as ``extra={"fields": {...}}`` for
:mod:`changewatch.logs` to render as key=value or JSON.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from changewatch.errors import SeenSetError, StoreError
from changewatch.values import Decision

__all__ = [
    "ERROR_KINDS",
    "NULL_OBSERVER",
    "Observer",
    "loggable_url",
    "observed_decisions",
    "observed_mark_seen",
    "path_group",
    "report_seen_error",
]

decision_log = logging.getLogger("changewatch.decisions")

#: What ``Observer.on_error`` is told failed.
ERROR_KINDS = ("store", "seen")

#: ``Decision.path`` → the latency group an operator cares about: the raw-bytes fast path,
#: the normalised-text comparison, or a full fingerprint (SimHash; new pages too). A 304 Not
#: Modified answer is recorded without a body, like the raw fast path.
_PATH_GROUPS = {
    "raw": "raw",
    "not-modified": "raw",
    "normalised": "normalised",
    "refingerprint": "normalised",
    "simhash": "changed",
    "binary": "changed",
    "redirect": "normalised",
    "new": "changed",
}


def path_group(path: str) -> str:
    """The latency group of a decision path: ``raw``, ``normalised`` or ``changed``.

    >>> [path_group(p) for p in ("raw", "not-modified", "refingerprint", "new", "simhash")]
    ['raw', 'raw', 'normalised', 'changed', 'changed']
    """
    return _PATH_GROUPS.get(path, "changed")


def loggable_url(url: str, policy: str) -> str | None:
    """A URL as the URL-storage policy allows it in a log: never credentials.

    ``full`` keeps the query, ``no-query`` drops it (and any fragment), ``none`` keeps
    nothing; userinfo (``user:password@``) is always removed.

    >>> loggable_url("https://u:pw@example.com/a?email=x@y.z", "full")
    'https://example.com/a?email=x@y.z'
    >>> loggable_url("https://example.com/a?email=x@y.z#top", "no-query")
    'https://example.com/a'
    >>> loggable_url("https://example.com/a", "none") is None
    True
    """
    if policy == "none":
        return None
    scheme, sep, rest = url.partition("://")
    if sep:
        authority_end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
        authority = rest[:authority_end]
        url = f"{scheme}://{authority.rpartition('@')[2]}{rest[authority_end:]}"
    if policy != "full":
        url = url.partition("?")[0].partition("#")[0]
    return url


class Observer:
    """Receives what a :class:`~changewatch.watch.ChangeWatch` did; every method a no-op."""

    def on_decisions(self, decisions: Sequence[Decision], seconds: float) -> None:
        """``should_parse``/``should_parse_many`` returned ``decisions`` after ``seconds``."""

    def on_mark_seen(self, new_count: int, total: int) -> None:
        """``mark_seen``/``mark_seen_many`` saw ``total`` URLs, ``new_count`` of them new."""

    def on_error(self, kind: str) -> None:
        """An operation failed: ``kind`` is ``"store"`` or ``"seen"`` (see ERROR_KINDS)."""


#: The do-nothing observer ChangeWatch uses when none is given.
NULL_OBSERVER = Observer()


class _Watched(Protocol):
    """What the wrappers read from the watch they decorate."""

    @property
    def observer(self) -> Observer: ...

    @property
    def url_policy(self) -> str: ...


P = ParamSpec("P")
W = TypeVar("W", bound=_Watched)
R = TypeVar("R", Decision, list[Decision])


def observed_decisions(
    method: Callable[Concatenate[W, P], R],
) -> Callable[Concatenate[W, P], R]:
    """Wrap ``should_parse``/``should_parse_many``: time it, log and report its decisions.

    A :class:`~changewatch.errors.StoreError` is reported as ``on_error("store")``, a
    :class:`~changewatch.errors.SeenSetError` (the ``seen_precheck`` lookup) as
    ``on_error("seen")``; both are re-raised.
    """

    @functools.wraps(method)
    def wrapper(self: W, /, *args: P.args, **kwargs: P.kwargs) -> R:
        started = time.perf_counter()
        try:
            result = method(self, *args, **kwargs)
        except StoreError:
            self.observer.on_error("store")
            raise
        except SeenSetError:
            self.observer.on_error("seen")
            raise
        seconds = time.perf_counter() - started
        decisions = [result] if isinstance(result, Decision) else result
        if decision_log.isEnabledFor(logging.DEBUG):
            _log_decisions(decisions, seconds, self.url_policy)
        self.observer.on_decisions(decisions, seconds)
        return result

    return wrapper


def observed_mark_seen(
    method: Callable[Concatenate[W, P], list[bool]],
) -> Callable[Concatenate[W, P], list[bool]]:
    """Wrap ``mark_seen_many``: report how many URLs were new, and seen-set failures."""

    @functools.wraps(method)
    def wrapper(self: W, /, *args: P.args, **kwargs: P.kwargs) -> list[bool]:
        try:
            answers = method(self, *args, **kwargs)
        except SeenSetError:
            self.observer.on_error("seen")
            raise
        self.observer.on_mark_seen(sum(answers), len(answers))
        return answers

    return wrapper


def report_seen_error(observer: Observer) -> None:
    """Tell the observer a seen-set failed (for failures the caller absorbs, not raises)."""
    observer.on_error("seen")


#: The fields a decision's log message itself carries.
_SUMMARY = ("kind", "path", "distance", "url")


def _log_decisions(decisions: Sequence[Decision], seconds: float, policy: str) -> None:
    ms = round(seconds * 1000, 3)
    for d in decisions:
        fields: Mapping[str, Any] = {
            "kind": d.kind,
            "path": d.path,
            "digest": d.url_digest.hex(),
            "distance": d.distance,
            "ms": ms,
            "batch": len(decisions),
            "url": loggable_url(d.url, policy),
        }
        # Formatters of other frameworks (Scrapy's LOG_FORMAT) print only the message, so it
        # carries the fields that matter; changewatch's own print "decision" and every field.
        summary = " ".join(f"{k}={'-' if fields[k] is None else fields[k]}" for k in _SUMMARY)
        decision_log.debug("decision %s", summary, extra={"fields": fields, "event": "decision"})
