"""Canonicalisation policies (:class:`CanonPolicy`, :class:`HostPolicy`) and the rules'
version — pure, no I/O."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from changewatch.errors import ConfigError, InvalidURLError
from changewatch.urls.escapes import _ESCAPE_RE

__all__ = [
    "CANON_RULES_VERSION",
    "CANON_VERSION",
    "DEFAULT_MAX_URL_LENGTH",
    "DEFAULT_POLICY",
    "SESSION_ID_PARAMETERS",
    "TRACKING_PARAMETERS",
    "TRACKING_PREFIXES",
    "CanonPolicy",
    "HostPolicy",
    "canon_version",
]

#: Version of the code rules; bump whenever a rule changes any canonical form.
#: 1: the first pure-Python canonicaliser. 2: WHATWG parsing with ada (UTS #46 hosts,
#: ``'`` in a query written ``%27`` as browsers send it), the longer tracking list, policies.
CANON_RULES_VERSION = 2

#: ``canon_version`` of the default policy (equal to :data:`CANON_RULES_VERSION`).
CANON_VERSION = CANON_RULES_VERSION

#: URLs longer than this many characters are refused (browsers and servers cap near 8 KiB).
DEFAULT_MAX_URL_LENGTH = 8192

#: Query keys removed because they identify a click, a campaign or a recipient, never a
#: resource. Each one is defined as such by the service that adds it.
TRACKING_PARAMETERS = frozenset(
    {
        "gclid",  # Google Ads click id (Google Ads help: "About auto-tagging")
        "gclsrc",  # source of the gclid, Search Ads 360 (Google Ads help: auto-tagging)
        "dclid",  # Google Display & Video 360 click id (Google Ads help)
        "gbraid",  # Google Ads iOS app click id (Google Ads help: "iOS campaign measurement")
        "wbraid",  # Google Ads web-to-app click id (same source)
        "srsltid",  # Google Merchant Center auto-tagging (Merchant Center help: "srsltid")
        "_ga",  # Google Analytics cross-domain linker (analytics.js documentation)
        "_gl",  # Google tag linker (gtag.js cross-domain measurement documentation)
        "fbclid",  # Facebook outbound click id (Facebook, October 2018)
        "igshid",  # Instagram share id (observed on instagram.com share links)
        "msclkid",  # Microsoft Advertising click id (Microsoft Advertising help: auto-tagging)
        "yclid",  # Yandex Direct click id (Yandex Metrica help)
        "ttclid",  # TikTok click id (TikTok for Business help: "TikTok Click ID")
        "twclid",  # X (Twitter) click id (X Business help: "Conversion tracking")
        "li_fat_id",  # LinkedIn first-party ad click id (LinkedIn Insight Tag help)
        "mc_eid",  # Mailchimp subscriber id (Mailchimp help: "Mailchimp tracking parameters")
        "mc_cid",  # Mailchimp campaign id (same source)
        "mkt_tok",  # Marketo email tracking token (Adobe Marketo docs: "mkt_tok")
        "_hsenc",  # HubSpot email tracking (HubSpot knowledge base)
        "_hsmi",  # HubSpot email tracking (same source)
        "__hstc",  # HubSpot cross-domain visitor cookie in links (HubSpot knowledge base)
        "__hssc",  # HubSpot cross-domain session cookie in links (same source)
        "__hsfp",  # HubSpot cross-domain fingerprint in links (same source)
        # Matomo campaign parameters (Matomo guide: "Campaign tracking"), exact names only:
        # a "pk_" prefix would also match primary keys of other applications.
        "pk_campaign",
        "pk_kwd",
        "pk_keyword",
        "pk_source",
        "pk_medium",
        "pk_content",
        "pk_cid",
        "mtm_campaign",
        "mtm_kwd",
        "mtm_keyword",
        "mtm_source",
        "mtm_medium",
        "mtm_content",
        "mtm_cid",
        "mtm_group",
        "mtm_placement",
    }
)

#: Key prefixes removed: ``utm_`` (Google Analytics campaign parameters, "Collect campaign
#: data with custom URLs"; the five documented keys and the newer ``utm_id`` and friends).
TRACKING_PREFIXES = ("utm_",)

#: Session-id keys removed when a policy sets ``strip_session_ids`` (off by default), with
#: ``;jsessionid=`` path parameters: Java Servlet spec "URL rewriting" (``jsessionid``),
#: PHP ``session.name`` default (``PHPSESSID``), the generic ``sid``, and ColdFusion client
#: variables (``CFID``/``CFTOKEN``, Adobe ColdFusion docs "Client and session variables").
SESSION_ID_PARAMETERS = frozenset({"jsessionid", "phpsessid", "sid", "cfid", "cftoken"})


def _param_names(name: str, values: Iterable[str], *, allow_prefix: bool) -> frozenset[str]:
    """Validate and lower-case a list of query keys."""
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise ConfigError(f"{name} must be a list of strings, got {values!r}")
    out = set()
    for value in values:
        if not isinstance(value, str) or not value.strip("*"):
            raise ConfigError(f"{name} entries must be non-empty strings, got {value!r}")
        if "*" in value[:-1] or (value.endswith("*") and not allow_prefix):
            raise ConfigError(
                f"{name} entry {value!r}: '*' is only allowed at the end of drop_params entries"
            )
        if _ESCAPE_RE.search(value.rstrip("*")) or "&" in value or "=" in value:
            raise ConfigError(f"{name} entry {value!r} is not a plain query key")
        out.add(value.lower())
    return frozenset(out)


def _triggers(names: Iterable[str]) -> tuple[str, ...]:
    """A few short substrings of which every droppable key (lower-cased) contains one,
    chosen greedily (most keys covered, then the longest): a query holding none of them
    has nothing to drop, which two or three ``in`` tests tell without splitting it."""
    uncovered = set(names)
    chosen: list[str] = []
    while uncovered:
        counts: dict[str, int] = {}
        for name in uncovered:
            for piece in {name[i : i + n] for n in (1, 2, 3, 4) for i in range(len(name))}:
                if len(piece) > 1 or piece == "_":
                    counts[piece] = counts.get(piece, 0) + 1
        if not counts:  # one-letter names: the name itself
            chosen.extend(sorted(uncovered))
            break
        best = max(counts, key=lambda piece: (counts[piece], len(piece), piece))
        chosen.append(best)
        uncovered = {name for name in uncovered if best not in name}
    return tuple(chosen)


class _DropVerdicts(dict[str, bool]):
    """Whether a query key (as written, any case) is dropped, worked out on first sight:
    a crawl's queries share few keys. Bounded: emptied when it reaches ``limit`` keys."""

    __slots__ = ("_drop", "_keep", "_limit", "_prefixes")

    def __init__(
        self, drop: frozenset[str], prefixes: tuple[str, ...], keep: frozenset[str], limit: int
    ) -> None:
        super().__init__()
        self._drop, self._prefixes, self._keep, self._limit = drop, prefixes, keep, limit

    def __missing__(self, key: str) -> bool:
        lowered = key.lower()
        verdict = lowered in self._drop or (
            lowered.startswith(self._prefixes) and lowered not in self._keep
        )
        if len(self) >= self._limit:
            self.clear()
        self[key] = verdict
        return verdict


#: Query keys whose verdict each :class:`HostPolicy` remembers (about 100 bytes each).
_DROP_VERDICTS_LIMIT = 10_000


def _check_bool(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise ConfigError(f"{name} must be true or false, got {value!r}")


_FLAGS = ("strip_session_ids", "fold_trailing_slash", "keep_query_order", "keep_routing_fragments")


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """The policy rules for one host (or the default for every host).

    ``drop_params``: extra query keys to remove (case-insensitive; ``name*`` is a prefix).
    ``keep_params``: keys never removed, even when listed as tracking or session ids.
    ``strip_session_ids``: remove :data:`SESSION_ID_PARAMETERS` and ``;jsessionid=``.
    ``fold_trailing_slash``: ``/a/`` becomes ``/a`` (the root ``/`` stays).
    ``keep_query_order``: pairs keep their order (tracking ones still go).
    ``keep_routing_fragments``: fragments starting ``!`` or ``/`` (``#!/a``, ``#/a``) stay.
    """

    drop_params: frozenset[str] = frozenset()
    keep_params: frozenset[str] = frozenset()
    strip_session_ids: bool = False
    fold_trailing_slash: bool = False
    keep_query_order: bool = False
    keep_routing_fragments: bool = False
    _drop_exact: frozenset[str] = field(init=False, repr=False, compare=False)
    _drop_prefixes: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _drop_triggers: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _path_rules: bool = field(init=False, repr=False, compare=False)
    _dropped: _DropVerdicts = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        drop = _param_names("drop_params", self.drop_params, allow_prefix=True)
        keep = _param_names("keep_params", self.keep_params, allow_prefix=False)
        both = drop & keep
        if both:
            raise ConfigError(f"{sorted(both)[0]!r} is in both drop_params and keep_params")
        for flag in _FLAGS:
            _check_bool(flag, getattr(self, flag))
        exact = {p for p in drop if not p.endswith("*")} | TRACKING_PARAMETERS
        if self.strip_session_ids:
            exact |= SESSION_ID_PARAMETERS
        prefixes = TRACKING_PREFIXES + tuple(sorted(p[:-1] for p in drop if p.endswith("*")))
        object.__setattr__(self, "drop_params", drop)
        object.__setattr__(self, "keep_params", keep)
        object.__setattr__(self, "_drop_exact", frozenset(exact - keep))
        object.__setattr__(self, "_drop_prefixes", prefixes)
        object.__setattr__(self, "_drop_triggers", _triggers([*(exact - keep), *prefixes]))
        object.__setattr__(self, "_path_rules", self.strip_session_ids or self.fold_trailing_slash)
        verdicts = _DropVerdicts(frozenset(exact - keep), prefixes, keep, _DROP_VERDICTS_LIMIT)
        object.__setattr__(self, "_dropped", verdicts)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready, order-independent description (what :func:`canon_version` hashes)."""
        return {
            "drop_params": sorted(self.drop_params),
            "keep_params": sorted(self.keep_params),
            "strip_session_ids": self.strip_session_ids,
            "fold_trailing_slash": self.fold_trailing_slash,
            "keep_query_order": self.keep_query_order,
            "keep_routing_fragments": self.keep_routing_fragments,
        }


@dataclass(frozen=True, slots=True)
class CanonPolicy:
    """Canonicalisation policy: the default :class:`HostPolicy`, per-host ones, a length cap.

    ``hosts`` maps a host name to its complete rules: ``"example.com"`` matches that host
    only, ``".example.com"`` the domain and every subdomain (the longest match wins). Names
    are canonicalised (case, IDNA, trailing dot), so ``"Bücher.example"`` works.

    >>> from changewatch.urls import canonicalise
    >>> policy = CanonPolicy(hosts={"shop.example": HostPolicy(keep_query_order=True)})
    >>> canonicalise("http://shop.example/?b=1&a=2", policy)
    'http://shop.example/?b=1&a=2'
    """

    default: HostPolicy = HostPolicy()
    hosts: Mapping[str, HostPolicy] = field(default_factory=dict)
    max_length: int = DEFAULT_MAX_URL_LENGTH
    _exact: Mapping[str, HostPolicy] = field(init=False, repr=False, compare=False)
    _suffixes: tuple[tuple[str, HostPolicy], ...] = field(init=False, repr=False, compare=False)
    _everywhere: HostPolicy | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.default, HostPolicy):
            raise ConfigError(f"default must be a HostPolicy, got {type(self.default).__name__}")
        if (
            isinstance(self.max_length, bool)
            or not isinstance(self.max_length, int)
            or self.max_length < 16
        ):
            raise ConfigError(f"max_length must be an integer ≥ 16, got {self.max_length!r}")
        if not isinstance(self.hosts, Mapping):
            raise ConfigError(f"hosts must be a mapping, got {type(self.hosts).__name__}")
        hosts: dict[str, HostPolicy] = {}
        for name, rules in self.hosts.items():
            if not isinstance(rules, HostPolicy):
                raise ConfigError(f"hosts[{name!r}] must be a HostPolicy")
            hosts[_policy_host(name)] = rules
        object.__setattr__(self, "hosts", MappingProxyType(dict(sorted(hosts.items()))))
        exact = {k: v for k, v in hosts.items() if not k.startswith(".")}
        suffixes = sorted(
            ((k, v) for k, v in hosts.items() if k.startswith(".")), key=lambda kv: -len(kv[0])
        )
        object.__setattr__(self, "_exact", MappingProxyType(exact))
        object.__setattr__(self, "_suffixes", tuple(suffixes))
        # The rules when no host has its own (what canonicalise looks up first).
        object.__setattr__(self, "_everywhere", None if hosts else self.default)

    def __reduce__(self) -> tuple[Any, tuple[HostPolicy, dict[str, HostPolicy], int]]:
        """Pickled (and deep-copied) as its arguments, built again on load: the read-only
        maps it keeps cannot be pickled (a policy crosses to worker processes)."""
        return (CanonPolicy, (self.default, dict(self.hosts), self.max_length))

    def rules_for(self, host: str) -> HostPolicy:
        """The rules for a canonical host name (no port).

        >>> CanonPolicy().rules_for("example.com") == HostPolicy()
        True
        """
        if not self.hosts:
            return self.default
        found = self._exact.get(host)
        if found is not None:
            return found
        for suffix, rules in self._suffixes:
            if host.endswith(suffix) or host == suffix[1:]:
                return rules
        return self.default

    def describe(self) -> dict[str, Any]:
        """A JSON-ready description of every rule (the length cap is not a rule)."""
        default = self.default.describe()
        return {
            "default": default,
            "hosts": {k: v.describe() for k, v in self.hosts.items() if v.describe() != default},
        }


#: The policy used when none is given: the code rules alone.
DEFAULT_POLICY = CanonPolicy()
_DEFAULT_DESCRIPTION = json.dumps(DEFAULT_POLICY.describe(), sort_keys=True)


def canon_version(policy: CanonPolicy | None = None) -> int:
    """The number stored with each snapshot naming the code rules and the policy.

    The default policy's is :data:`CANON_RULES_VERSION` (below 1024). Any other policy gets
    1024 + (blake2b of the rules version and the policy's description) mod 31744: a 15-bit
    tag that fits ``page_snapshots.canon_version`` (SMALLINT). Two different policies share
    a tag with probability 1/31744; equal policies always share one.

    >>> canon_version() == CANON_RULES_VERSION
    True
    >>> canon_version(CanonPolicy(default=HostPolicy(fold_trailing_slash=True)))
    8526
    """
    if policy is None:
        return CANON_RULES_VERSION
    description = json.dumps(policy.describe(), sort_keys=True)
    if description == _DEFAULT_DESCRIPTION:
        return CANON_RULES_VERSION
    digest = hashlib.blake2b(
        f"{CANON_RULES_VERSION}\n{description}".encode(), digest_size=8
    ).digest()
    return 1024 + int.from_bytes(digest, "big") % (32768 - 1024)


def _policy_host(name: object) -> str:
    """Canonicalise a policy's host key, keeping a leading "." (domain and subdomains)."""
    if not isinstance(name, str) or not name.strip("."):
        raise ConfigError(f"host names in a policy must be non-empty strings, got {name!r}")
    # Host keys are canonicalised by the rules they configure (a call back into the package).
    from changewatch.urls.canon import canonicalise
    from changewatch.urls.digest import url_host

    dot = "." if name.startswith(".") else ""
    try:
        canonical = canonicalise(f"http://{name.lstrip('.')}/")
    except InvalidURLError as exc:
        raise ConfigError(f"policy host {name!r} is not a valid host: {exc.reason}") from None
    host = url_host(canonical)
    port = host.rpartition("]")[2] if host.startswith("[") else host
    if host != canonical[7:-1] or ":" in port:
        raise ConfigError(f"policy host {name!r} must be a host name alone")
    return dot + host
