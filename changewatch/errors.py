"""The one exception tree of changewatch.

::

    ChangewatchError
    ├── ConfigError (ValueError)           a setting or a seen-set/database URL is malformed
    │   └── CanonVersionMismatchError      the store was keyed by other canonicalisation rules
    ├── InvalidURLError (ValueError)       a page URL cannot be canonicalised
    ├── PageTooLargeError (ValueError)     a page is over the configured size limit
    ├── PageTooComplexError (ValueError)   a page over a parse limit (attributes, text)
    ├── StoreError                         the snapshot store failed; nothing was written
    │   ├── SchemaOutOfDateError           the database schema is behind the code
    │   └── StoreConflictError             a batch lost too many races in a row
    ├── SeenSetError                       a seen-set file or server failed
    │   ├── SeenSetUnavailableError        the seen-set server cannot be reached
    │   └── ForgetNotSupportedError        a Bloom filter was asked to forget a URL
    ├── SitemapError                       a sitemap could not be read (``url`` names it)
    │   ├── SitemapParseError              not a sitemap, or broken beyond recovery
    │   ├── SitemapRefusedError            a hostile construct (DOCTYPE, ENTITY) refused
    │   ├── SitemapLimitError              over a size, count, ratio or depth limit
    │   └── FetchError                     an HTTP fetch failed (``status`` if any)
    │       ├── UnsafeURLError             a URL or address the fetcher must not visit
    │       └── TimeLimitError             a walk's per-host or per-run time limit passed
    ├── UnexpectedStatusError (ValueError) should_parse given a status other than 2xx or 304
    ├── PageNotStoredError (LookupError)   a 304, a diff or a version for a page never stored
    └── TextNotStoredError (LookupError)   a version's text was not kept (store_text off)

Every error's message defaults to its class docstring; data travels as attributes
(``url``, ``reason``, ``retryable``), not only in the text. Adapters translate their
driver's exceptions into these in one place and chain the original (``raise ... from exc``).
"""

from __future__ import annotations


class ChangewatchError(Exception):
    """A changewatch operation failed."""

    retryable: bool = False

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())


class ConfigError(ChangewatchError, ValueError):
    """A changewatch setting is invalid."""


class CanonVersionMismatchError(ConfigError):
    """The store holds snapshots keyed by other URL canonicalisation rules or policy."""

    def __init__(self, expected: int, found: dict[int, int]) -> None:
        self.expected = expected
        self.found = found
        others = ", ".join(f"{v} ({n} rows)" for v, n in sorted(found.items()) if v != expected)
        super().__init__(
            f"the store holds snapshots with canon_version {others}, but the canonicalisation "
            f"rules and policy in use are canon_version {expected}: their URLs would be keyed "
            "differently and their history split. Use the policy the store was built with, "
            "or a new database, or pass allow_mixed_canon=True to mix them knowingly"
        )


class InvalidURLError(ChangewatchError, ValueError):
    """A URL could not be canonicalised."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        self.reason = reason
        shown = url if len(url) <= 200 else url[:200] + "…"
        super().__init__(f"invalid URL {shown!r}: {reason}")


class PageTooLargeError(ChangewatchError, ValueError):
    """A page is larger than the configured limit and was not parsed."""

    def __init__(self, url: str, size: int, limit: int) -> None:
        self.url = url
        self.size = size
        self.limit = limit
        super().__init__(f"page {url!r} is {size} bytes, over the {limit}-byte limit")


class PageTooComplexError(ChangewatchError, ValueError):
    """A page is over a limit that keeps parsing it bounded in time and memory.

    ``limit_name`` names the limit (``"attributes"``: attributes on one element;
    ``"names"``: distinct attribute or tag names; ``"text"``: characters of normalised
    text), ``limit`` its value, ``found`` what the page reached (at least) and ``url`` the
    page's canonical URL where known (``should_parse`` sets it).
    """

    def __init__(self, limit_name: str, limit: int, found: int, url: str | None = None) -> None:
        self.limit_name = limit_name
        self.limit = limit
        self.found = found
        self.url = url
        what = {
            "attributes": f"an element has more than {limit} attributes ({found})",
            "names": f"the page has more than {limit} distinct attribute or tag names",
            "text": f"the normalised text passes {limit} characters ({found} at least)",
        }.get(limit_name, f"the page is over the {limit_name} limit {limit} ({found})")
        page = "the page" if url is None else f"page {url!r}"
        super().__init__(
            f"{what}: {page} is refused, as parsing it would cost time or memory "
            "far out of proportion to its size (SECURITY.md, Hostile HTML)"
        )


class StoreError(ChangewatchError):
    """The snapshot store failed; the operation wrote nothing.

    ``retryable`` says whether the same call may succeed later (the server was unreachable,
    busy, shutting down, or the transaction lost a race); it is false for errors a retry
    repeats (a malformed statement, a constraint, a limit of the server or the driver).
    """

    retryable = True

    def __init__(self, message: str | None = None, *, retryable: bool | None = None) -> None:
        super().__init__(message)
        if retryable is not None:
            self.retryable = retryable


class SchemaOutOfDateError(StoreError):
    """The database schema is not at the version this changewatch needs."""

    retryable = False

    def __init__(self, current: str | None, expected: str) -> None:
        self.current = current
        self.expected = expected
        super().__init__(
            f"database schema is at revision {current or 'none (empty database)'}, "
            f"changewatch needs {expected}: run `changewatch db upgrade`"
        )


class StoreConflictError(StoreError):
    """A batch kept losing races with other workers and was given up; nothing was written."""


class SeenSetError(ChangewatchError):
    """The seen-set failed."""


class SeenSetUnavailableError(SeenSetError):
    """The seen-set server could not be reached."""

    retryable = True


class ForgetNotSupportedError(SeenSetError):
    """A Bloom filter cannot forget one URL: let its entries age out (``max_age``) instead."""


class SitemapError(ChangewatchError):
    """A sitemap could not be read."""

    def __init__(self, url: str, message: str | None = None) -> None:
        self.url = url
        detail = message or (self.__doc__ or "").strip()
        super().__init__(f"{url}: {detail}")


class SitemapParseError(SitemapError):
    """The document is not a sitemap or feed, or is broken beyond recovery."""


class SitemapRefusedError(SitemapError):
    """The document uses a construct refused as hostile (a DOCTYPE or ENTITY declaration)."""


class SitemapLimitError(SitemapError):
    """The document is over a configured limit and was abandoned."""

    def __init__(self, url: str, limit: str, value: int, message: str | None = None) -> None:
        self.limit = limit
        self.value = value
        super().__init__(url, message or f"over the {limit} limit of {value}")


class FetchError(SitemapError):
    """An HTTP fetch failed."""

    retryable = True

    def __init__(self, url: str, message: str | None = None, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(url, message)


class UnsafeURLError(FetchError):
    """The fetcher refused a URL or an address it must not visit."""

    retryable = False


class TimeLimitError(FetchError):
    """A sitemap walk's time limit (per host or per run) passed before the fetch finished."""

    retryable = False

    def __init__(self, url: str, limit: str) -> None:
        #: What passed, as the run reports it: ``"the host's time limit of 1800 s"``.
        self.limit = limit
        super().__init__(url, f"{limit} passed")


class UnexpectedStatusError(ChangewatchError, ValueError):
    """``should_parse`` records 2xx pages and 304 Not Modified only; other statuses are refused."""

    def __init__(self, url: str, status: int) -> None:
        self.url = url
        self.status = status
        super().__init__(
            f"HTTP status {status} for {url!r}: should_parse records a fetched page (2xx) or "
            "304 Not Modified only; nothing was written"
        )


class PageNotStoredError(ChangewatchError, LookupError):
    """The page (or the version of it) asked for was never stored."""

    def __init__(self, url: str, message: str | None = None) -> None:
        self.url = url
        super().__init__(message or f"{url!r} was never stored")


class TextNotStoredError(ChangewatchError, LookupError):
    """The normalised text of a version was not kept (``store_text`` was off when it was seen)."""

    def __init__(self, url: str, versions: list[int]) -> None:
        self.url = url
        self.versions = versions
        shown = ", ".join(str(v) for v in versions)
        super().__init__(
            f"no stored text for version(s) {shown} of {url!r}: texts are kept only while "
            "store_text is on (CHANGEWATCH_STORE_TEXT=1) when a version is first seen"
        )
