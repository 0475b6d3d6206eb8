"""What of a page is noise: :class:`FingerprintPolicy`, per host — pure, no I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from selectolax.lexbor import LexborHTMLParser, SelectolaxError

from changewatch.errors import ConfigError
from changewatch.fingerprint.volatile import DEFAULT_VOLATILE_PATTERNS

__all__ = [
    "BOILERPLATE_TAGS",
    "DEFAULT_POLICY",
    "DROPPED_TAGS",
    "HIDDEN_SELECTOR",
    "FingerprintPolicy",
]

#: Elements whose content is never visible text.
DROPPED_TAGS = ("script", "style", "noscript", "template", "svg", "iframe", "object")

#: Site-wide navigation and furniture (HTML Living Standard §4.3 sections); a ``header`` is
#: boilerplate only at page level, outside ``article``/``main``/``section``.
BOILERPLATE_TAGS = ("nav", "footer", "aside")
_SECTIONING = frozenset({"article", "main", "section"})

#: Elements not rendered (HTML §6.1 the ``hidden`` attribute; WAI-ARIA 1.2 ``aria-hidden``).
HIDDEN_SELECTOR = '[hidden], [aria-hidden="true" i], input[type="hidden" i]'


@dataclass(frozen=True, slots=True)
class FingerprintPolicy:
    """What :func:`normalise` drops, for every host, with per-host overrides.

    ``ignore``: CSS selectors whose elements are dropped. ``main``: a CSS selector; when it
    matches, the first match is the page's main content and everything else its chrome.
    ``volatile``: regular expressions for volatile stamps; the default patterns are removed
    where they stand as labels only (:func:`~changewatch.fingerprint.volatile.strip_label_stamps`),
    patterns added to them wherever they match. ``regions`` (default true): split the page
    into main content and chrome (:mod:`~changewatch.fingerprint.regions`); false: all
    visible text is content, as before version 4. ``boilerplate`` (default false): also leave
    the chrome out of the chrome hash, so that its changes are not even flagged (before
    version 4 it dropped ``nav``/``footer``/``aside``/page ``header`` from the content hash,
    which hid 4.6% of real edits; chrome is now never part of the content hash).
    ``hosts`` maps a host name (``".NAME"``: the domain and
    its subdomains) to the policy used there instead (see :meth:`for_host`); host policies
    have no hosts of their own. Bad selectors or patterns raise :class:`ConfigError` naming
    them.

    >>> policy = FingerprintPolicy(hosts={".example.com": FingerprintPolicy(main="article")})
    >>> policy.for_host("news.example.com").main, policy.for_host("example.org").main
    ('article', None)
    """

    ignore: tuple[str, ...] = ()
    main: str | None = None
    volatile: tuple[str, ...] = DEFAULT_VOLATILE_PATTERNS
    boilerplate: bool = False
    regions: bool = True
    hosts: Mapping[str, FingerprintPolicy] = field(default_factory=dict)
    _volatile_re: re.Pattern[str] | None = field(init=False, repr=False, compare=False)
    _label_stamps: bool = field(init=False, repr=False, compare=False)
    _strip_selector: str = field(init=False, repr=False, compare=False)
    _drop_selector: str | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("ignore", "volatile"):
            value = getattr(self, name)
            if isinstance(value, str) or not isinstance(value, Iterable):
                raise ConfigError(f"fingerprint policy: {name} must be a list of strings")
            value = tuple(value)
            if not all(isinstance(v, str) for v in value):
                raise ConfigError(f"fingerprint policy: {name} must be a list of strings")
            object.__setattr__(self, name, value)
        if self.main is not None and not isinstance(self.main, str):
            raise ConfigError(f"fingerprint policy: main must be a string, got {self.main!r}")
        for name in ("boilerplate", "regions"):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(
                    f"fingerprint policy: {name} must be true or false, got {getattr(self, name)!r}"
                )
        probe = LexborHTMLParser("<p></p>")
        for selector in (*self.ignore, *([self.main] if self.main is not None else [])):
            try:
                probe.css(selector)
            except (SelectolaxError, ValueError, TypeError):
                raise ConfigError(f"fingerprint policy: bad CSS selector {selector!r}") from None
        for pattern in self.volatile:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ConfigError(
                    f"fingerprint policy: bad volatile pattern {pattern!r}: {exc}"
                ) from None
        # The default patterns stand for the contextual label rule; any other pattern is
        # removed wherever it matches.
        label_stamps = all(p in self.volatile for p in DEFAULT_VOLATILE_PATTERNS)
        extra = [p for p in self.volatile if not (label_stamps and p in DEFAULT_VOLATILE_PATTERNS)]
        joined = "|".join(f"(?:{p})" for p in extra)
        object.__setattr__(self, "_volatile_re", re.compile(joined) if joined else None)
        object.__setattr__(self, "_label_stamps", label_stamps)
        # Dropped tags in one query; then the ignored selectors over what is left, as they may
        # be structural (":first-child", "a + b"). Hidden elements are decided one by one
        # (collapsed content or noise: changewatch.fingerprint.blocks).
        object.__setattr__(self, "_strip_selector", ", ".join(DROPPED_TAGS))
        object.__setattr__(self, "_drop_selector", ", ".join(self.ignore) or None)
        if not isinstance(self.hosts, Mapping):
            raise ConfigError("fingerprint policy: hosts must map host names to policies")
        for host, rules in self.hosts.items():
            if not isinstance(host, str) or not isinstance(rules, FingerprintPolicy):
                raise ConfigError(f"fingerprint policy: hosts[{host!r}] must be a policy")
            if rules.hosts:
                raise ConfigError(f"fingerprint policy: hosts[{host!r}] has hosts of its own")
        object.__setattr__(self, "hosts", {h.lower(): r for h, r in self.hosts.items()})

    def __hash__(self) -> int:
        return hash(
            (
                self.ignore,
                self.main,
                self.volatile,
                self.boilerplate,
                self.regions,
                tuple(self.hosts),
            )
        )

    def for_host(self, host: str | None) -> FingerprintPolicy:
        """The policy for ``host``: an exact entry, else the longest ``".domain"`` entry, else
        this policy (its ``hosts`` are then ignored by :func:`normalise`)."""
        if not self.hosts or not host:
            return self
        host = host.lower()
        found = self.hosts.get(host)
        if found is not None:
            return found
        best: tuple[int, FingerprintPolicy] | None = None
        for name, rules in self.hosts.items():
            matches = name.startswith(".") and (host.endswith(name) or host == name[1:])
            if matches and (best is None or len(name) > best[0]):
                best = (len(name), rules)
        return self if best is None else best[1]


#: The policy used when none is given.
DEFAULT_POLICY = FingerprintPolicy()
