"""A routed seen-set: exact where completeness matters, a Bloom filter for the rest.

``SCHEME…?kind=route&exact_hosts=H1,H2&…`` or ``…?kind=route&policy=PATH.toml`` on any
backend builds two seen-sets from the one URL — ``exact`` and ``bloom`` — and sends each URL
to one of them by its canonical host (or by a pattern over its canonical URL):

* ``memory:?kind=route…`` → ``memory:?kind=exact`` and ``memory:?kind=bloom``;
* ``file:PATH?kind=route…`` → ``file:PATH.exact`` and ``file:PATH.bloom?kind=bloom``;
* ``redis://…?kind=route&key=K…`` → ``kind=set&key=K:exact`` and ``kind=bloom&key=K:bloom``.

``capacity``, ``error_rate``, ``blocks`` and ``scalable`` go to the Bloom route only; every
other option (``max_age``, ``window``, ``checkpoint_s``, ``timeout``, ``replay_s``, ``ttl``…)
to both. ``exact_hosts`` is a comma-separated list: ``shop.example.com`` names one host,
``.example.org`` the domain and every subdomain. The policy file (TOML)::

    exact_hosts = ["shop.example.com", ".example.org"]
    exact_url_patterns = ['^https://news\\.example\\.com/2026/']  # regex over the canonical URL
    # optional: the routes' own seen-set URLs instead of the derived ones
    exact = "redis://10.0.0.5:6379/0?kind=set&key=crawl:exact"
    bloom = "redis://10.0.0.5:6379/0?kind=bloom&key=crawl:bloom&capacity=100000000"

A routed seen-set takes URLs (``str``): it routes by host, which a digest does not carry
(``TypeError`` for digests; :attr:`RoutedSeenSet.routes` and :meth:`RoutedSeenSet.route_of`
give the route to add a digest to). ``forget`` works for URLs of the exact route and raises
:class:`~changewatch.errors.ForgetNotSupportedError` for the others.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

from changewatch.errors import ConfigError, ForgetNotSupportedError
from changewatch.seen.ageing import Clock
from changewatch.seen.options import SeenURL
from changewatch.urls import canonicalise, digest_canonical

__all__ = ["BLOOM_ROUTE", "EXACT_ROUTE", "RoutePolicy", "RoutedSeenSet", "open_routed"]

EXACT_ROUTE = "exact"
BLOOM_ROUTE = "bloom"
#: Options of a routed URL that only the Bloom route takes.
BLOOM_ONLY = ("capacity", "error_rate", "blocks", "scalable")
_POLICY_FIELDS = {"exact_hosts", "exact_url_patterns", "exact", "bloom"}


@dataclass(frozen=True)
class RoutePolicy:
    """Which canonical URLs go to the exact route: listed hosts, domains, URL patterns.

    >>> policy = RoutePolicy.from_hosts(["shop.example.com", ".example.org"])
    >>> [policy.exact("http://shop.example.com/a"), policy.exact("https://a.b.example.org/")]
    [True, True]
    >>> policy.exact("http://example.com/")
    False
    """

    hosts: frozenset[str] = frozenset()
    domains: tuple[str, ...] = ()
    patterns: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def from_hosts(cls, names: Iterable[str], patterns: Iterable[str] = ()) -> RoutePolicy:
        """Hosts (``a.example``) and domains (``.example.org``), lower-cased; regexes."""
        hosts, domains = set(), []
        for raw in names:
            name = raw.strip().lower().rstrip(".")
            if not name or name == "." or any(c in name for c in "/:?#@ "):
                raise ValueError(f"{raw!r} is not a host name (or .domain)")
            if name.startswith("."):
                domains.append(name)
            else:
                hosts.add(name)
        compiled = []
        for pattern in patterns:
            try:
                compiled.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"exact_url_patterns: {pattern!r} is not a regex: {exc}") from None
        return cls(frozenset(hosts), tuple(domains), tuple(compiled))

    def exact(self, canonical_url: str) -> bool:
        """Whether a canonical URL belongs to the exact route."""
        host = urlsplit(canonical_url).hostname or ""
        if host in self.hosts or any(host.endswith(d) or host == d[1:] for d in self.domains):
            return True
        return any(p.search(canonical_url) for p in self.patterns)

    def describe(self) -> dict[str, Any]:
        """The policy as plain values (for ``stats()``)."""
        return {
            "hosts": sorted(self.hosts),
            "domains": list(self.domains),
            "patterns": [p.pattern for p in self.patterns],
        }


class RoutedSeenSet:
    """Two seen-sets behind one: URLs the policy names go to ``exact``, the rest to ``bloom``."""

    exact = False

    def __init__(self, policy: RoutePolicy, exact: Any, bloom: Any) -> None:
        self.policy = policy
        self.routes: dict[str, Any] = {EXACT_ROUTE: exact, BLOOM_ROUTE: bloom}

    def route_of(self, url: str) -> str:
        """The route of a URL: ``"exact"`` or ``"bloom"`` (InvalidURLError if it is invalid)."""
        return EXACT_ROUTE if self.policy.exact(canonicalise(url)) else BLOOM_ROUTE

    def _split(self, items: Iterable[str | bytes]) -> dict[str, list[tuple[int, bytes]]]:
        """Every item checked (URLs only), then (index, digest) per route."""
        routed: dict[str, list[tuple[int, bytes]]] = {EXACT_ROUTE: [], BLOOM_ROUTE: []}
        for index, item in enumerate(items):
            if not isinstance(item, str):
                raise TypeError(
                    "a routed seen-set routes by host, so it takes URLs (str), not 16-byte "
                    f"digests (got {type(item).__name__}); add a digest to "
                    "seen.routes[seen.route_of(url)]"
                )
            canonical = canonicalise(item)
            route = EXACT_ROUTE if self.policy.exact(canonical) else BLOOM_ROUTE
            routed[route].append((index, digest_canonical(canonical)))
        return routed

    def _each(
        self, items: Iterable[str | bytes], act: Callable[[Any, list[bytes]], list[bool]]
    ) -> list[bool]:
        routed = self._split(items)
        out = [False] * sum(len(v) for v in routed.values())
        for route, pairs in routed.items():
            if pairs:
                answers = act(self.routes[route], [d for _, d in pairs])
                for (index, _), answer in zip(pairs, answers, strict=True):
                    out[index] = answer
        return out

    def add(self, item: str | bytes) -> bool:
        return self.add_many([item])[0]

    def add_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """Each URL added to its route; one answer each, in order."""
        return self._each(items, lambda seen, batch: list(seen.add_many(batch)))

    def forget(self, item: str | bytes) -> bool:
        """Forget a URL of the exact route; ``ForgetNotSupportedError`` for the Bloom route's."""
        return self.forget_many([item])[0]

    def forget_many(self, items: Iterable[str | bytes]) -> list[bool]:
        """``forget`` for several; refused whole if any URL is on the Bloom route."""
        batch = list(items)
        routed = self._split(batch)
        if routed[BLOOM_ROUTE]:
            first = batch[routed[BLOOM_ROUTE][0][0]]
            raise ForgetNotSupportedError(
                f"{first!r} is on the Bloom route of a routed seen-set, which cannot forget one "
                "URL: list its host in exact_hosts to make it forgettable, or let entries age "
                "out (max_age=…)"
            )
        return self._each(batch, lambda seen, digests: list(seen.forget_many(digests)))

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, str):
            return False
        return item in self.routes[self.route_of(item)]

    def stats(self) -> Mapping[str, Any]:
        """The Bloom route's figures on top (the exact route has no false positives), the items
        of both, and each route's own stats under ``routes``."""
        routes = {name: dict(seen.stats()) for name, seen in self.routes.items()}
        bloom = routes[BLOOM_ROUTE]
        return {
            "kind": "routed",
            "items": sum(int(r["items"]) for r in routes.values()),
            "capacity": bloom.get("capacity"),
            "bits": bloom.get("bits"),
            "bytes": sum(int(r.get("bytes") or 0) for r in routes.values()),
            "error_rate": bloom.get("error_rate", 0.0),
            "estimated_error_rate": bloom.get("estimated_error_rate", 0.0),
            "policy": self.policy.describe(),
            "routes": routes,
        }

    def close(self) -> None:
        """Close both routes (the second even if the first fails)."""
        try:
            self.routes[EXACT_ROUTE].close()
        finally:
            self.routes[BLOOM_ROUTE].close()


def _load_policy(parsed: SeenURL, path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except OSError as exc:
        raise parsed.error(f"policy={path!r} cannot be read: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise parsed.error(f"policy={path!r} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - _POLICY_FIELDS)
    if unknown:
        raise parsed.error(f"policy={path!r}: unknown field(s) {', '.join(unknown)}")
    for name in ("exact_hosts", "exact_url_patterns"):
        value = data.get(name, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise parsed.error(f"policy={path!r}: {name} must be a list of strings")
    for name in ("exact", "bloom"):
        if name in data and not isinstance(data[name], str):
            raise parsed.error(f"policy={path!r}: {name} must be a seen-set URL (a string)")
    return data


def _route_urls(parsed: SeenURL, options: dict[str, str]) -> tuple[str, str]:
    """The exact and Bloom routes' URLs derived from a routed URL's base and options."""
    base = parsed.url.partition("?")[0]
    shared = {k: v for k, v in options.items() if k not in BLOOM_ONLY}
    bloom_only = {k: v for k, v in options.items() if k in BLOOM_ONLY}
    if parsed.scheme == "memory":
        return (
            f"memory:?{urlencode({'kind': 'exact', **shared})}",
            f"memory:?{urlencode({'kind': 'bloom', **shared, **bloom_only})}",
        )
    if parsed.scheme == "file":
        return (
            f"{base}.exact?{urlencode({'kind': 'exact', **shared})}",
            f"{base}.bloom?{urlencode({'kind': 'bloom', **shared, **bloom_only})}",
        )
    key = shared.pop("key", "changewatch:seen")
    return (
        f"{base}?{urlencode({'kind': 'set', 'key': f'{key}:exact', **shared})}",
        f"{base}?{urlencode({'kind': 'bloom', 'key': f'{key}:bloom', **shared, **bloom_only})}",
    )


def open_routed(
    parsed: SeenURL, clock: Clock | None, open_seen_set: Callable[..., Any]
) -> RoutedSeenSet:
    """Build a :class:`RoutedSeenSet` from a ``kind=route`` URL (``ConfigError`` if malformed)."""
    parsed.options.pop("kind")
    hosts = [h for h in parsed.text("exact_hosts", "").split(",") if h.strip()]
    policy_path = parsed.options.pop("policy", None)
    data = _load_policy(parsed, policy_path) if policy_path else {}
    hosts += data.get("exact_hosts", [])
    patterns = data.get("exact_url_patterns", [])
    if not hosts and not patterns:
        raise parsed.error("kind=route needs exact_hosts=… or policy=… naming the exact route")
    try:
        policy = RoutePolicy.from_hosts(hosts, patterns)
    except ValueError as exc:
        raise parsed.error(f"exact_hosts/policy: {exc}") from None
    derived = _route_urls(parsed, dict(parsed.options))
    exact_url, bloom_url = data.get("exact", derived[0]), data.get("bloom", derived[1])
    parsed.options.clear()
    exact = open_seen_set(exact_url, clock=clock)
    try:
        if not getattr(exact, "exact", False):
            raise ConfigError(f"the exact route {exact_url!r} is not an exact seen-set")
        bloom = open_seen_set(bloom_url, clock=clock)
    except BaseException:
        exact.close()
        raise
    return RoutedSeenSet(policy, exact, bloom)
