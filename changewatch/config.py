"""Settings, and the only reader of ``os.environ`` in changewatch.

``CHANGEWATCH_DATABASE_URL``
    the snapshot store, ``sqlite:///PATH`` or ``postgresql+psycopg://…``;
    default ``sqlite:///changewatch.db`` (a file in the working directory)
``CHANGEWATCH_SEEN_URL``
    the seen-set, ``memory:`` or ``file:PATH``; default ``file:changewatch.seen``
``CHANGEWATCH_MINOR_DISTANCE``
    SimHash bits at or under which a change is ``minor``; default ``3``
``CHANGEWATCH_MAX_PAGE_BYTES``
    pages larger than this are refused before parsing; default ``10485760`` (10 MiB)
``CHANGEWATCH_SEEN_ON_ERROR``
    what ``mark_seen`` does when a shared seen-set cannot be reached: ``raise`` or
    ``assume-new``; default ``raise``
``CHANGEWATCH_URL_POLICY``
    what of a URL the store keeps: ``full``, ``no-query`` or ``none``; default ``full``
``CHANGEWATCH_LOG_FORMAT``, ``CHANGEWATCH_LOG_LEVEL``
    log lines as ``kv`` (key=value) or ``json``, and the level; default ``kv``, ``WARNING``
    (:func:`load_log_settings`, applied by :func:`changewatch.logs.configure_logging`)
``CHANGEWATCH_CANON_POLICY``
    path of a TOML file with the URL canonicalisation policy (docs/canonicalisation.md) and,
    in its ``[fingerprint]`` table, the content fingerprint policy (docs/fingerprints.md);
    default: none, the code rules alone
``CHANGEWATCH_STORE_TEXT``
    keep the normalised text of every new version (compressed, once per content) for
    ``changewatch diff``: ``1``/``true``/``yes``/``on`` or ``0``/``false``/``no``/``off``;
    default off
``CHANGEWATCH_FLIP_WINDOW``
    how many of a page's latest versions a change is compared with to record a flip-flop
    (``reverted_to``); ``0`` turns it off; default 10
``CHANGEWATCH_LEARN_NOISE``
    learn each host's noisy blocks and leave them out of the hashes
    (``ChangeWatch(learn_noise=True)``, table ``host_noise``): a boolean as above; default off
``CHANGEWATCH_LEARN_TEMPLATES``
    learn each host's template blocks (short blocks on many of its pages) and classify them
    as chrome (``ChangeWatch(learn_templates=True)``, table ``host_templates``): a boolean as
    above; default off
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from changewatch.errors import ConfigError
from changewatch.fingerprint import FingerprintPolicy
from changewatch.urls import CanonPolicy, HostPolicy
from changewatch.values import (
    DEFAULT_DATABASE_URL,
    DEFAULT_FLIP_WINDOW,
    DEFAULT_MAX_PAGE_BYTES,
    DEFAULT_MINOR_DISTANCE,
    DEFAULT_SEEN_URL,
    SEEN_ON_ERROR,
    URL_POLICIES,
    SeenOnError,
    UrlPolicy,
    check_settings,
)

__all__ = [
    "DEFAULT_DATABASE_URL",
    "DEFAULT_MAX_PAGE_BYTES",
    "DEFAULT_MINOR_DISTANCE",
    "DEFAULT_SEEN_URL",
    "KNOWN_VARIABLES",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "SEEN_ON_ERROR",
    "URL_POLICIES",
    "LogFormat",
    "LogSettings",
    "SeenOnError",
    "Settings",
    "UrlPolicy",
    "canon_policy_from_mapping",
    "fingerprint_policy_from_mapping",
    "load_canon_policy",
    "load_fingerprint_policy",
    "load_log_settings",
    "load_settings",
    "misspelt_variables",
    "terminal_columns",
    "watch_arguments",
]


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything changewatch reads from its environment, validated."""

    database_url: str = DEFAULT_DATABASE_URL
    seen_url: str = DEFAULT_SEEN_URL
    minor_distance: int = DEFAULT_MINOR_DISTANCE
    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    url_policy: UrlPolicy = "full"
    canon_policy: CanonPolicy | None = None
    seen_on_error: SeenOnError = "raise"
    fingerprint_policy: FingerprintPolicy | None = None
    store_text: bool = False
    flip_window: int = DEFAULT_FLIP_WINDOW
    learn_noise: bool = False
    learn_templates: bool = False

    def __post_init__(self) -> None:
        check_settings(self.minor_distance, self.max_page_bytes, self.url_policy)
        if self.flip_window < 0:
            raise ConfigError(
                f"CHANGEWATCH_FLIP_WINDOW must be an integer >= 0, got {self.flip_window}"
            )
        if self.seen_on_error not in SEEN_ON_ERROR:
            raise ConfigError(
                f"CHANGEWATCH_SEEN_ON_ERROR must be one of {', '.join(SEEN_ON_ERROR)}, "
                f"got {self.seen_on_error!r}"
            )


def watch_arguments(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The keyword arguments of :class:`~changewatch.watch.ChangeWatch` that the
    ``CHANGEWATCH_*`` variables set (what :meth:`ChangeWatch.from_env` passes)."""
    settings = load_settings(environ)
    return {
        "database_url": settings.database_url,
        "seen_url": settings.seen_url,
        "minor_distance": settings.minor_distance,
        "max_page_bytes": settings.max_page_bytes,
        "url_policy": settings.url_policy,
        "canon_policy": settings.canon_policy,
        "fingerprint_policy": settings.fingerprint_policy,
        "seen_on_error": settings.seen_on_error,
        "store_text": settings.store_text,
        "flip_window": settings.flip_window,
        "learn_noise": settings.learn_noise,
        "learn_templates": settings.learn_templates,
    }


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Read ``CHANGEWATCH_*`` variables (from ``os.environ`` unless given)."""
    env = os.environ if environ is None else environ
    return Settings(
        database_url=env.get("CHANGEWATCH_DATABASE_URL") or DEFAULT_DATABASE_URL,
        seen_url=env.get("CHANGEWATCH_SEEN_URL") or DEFAULT_SEEN_URL,
        minor_distance=_int(env, "CHANGEWATCH_MINOR_DISTANCE", DEFAULT_MINOR_DISTANCE),
        max_page_bytes=_int(env, "CHANGEWATCH_MAX_PAGE_BYTES", DEFAULT_MAX_PAGE_BYTES),
        url_policy=cast(UrlPolicy, env.get("CHANGEWATCH_URL_POLICY") or "full"),
        canon_policy=(
            load_canon_policy(env["CHANGEWATCH_CANON_POLICY"])
            if env.get("CHANGEWATCH_CANON_POLICY")
            else None
        ),
        seen_on_error=cast(SeenOnError, env.get("CHANGEWATCH_SEEN_ON_ERROR") or "raise"),
        fingerprint_policy=(
            load_fingerprint_policy(env["CHANGEWATCH_CANON_POLICY"])
            if env.get("CHANGEWATCH_CANON_POLICY")
            else None
        ),
        store_text=_bool(env, "CHANGEWATCH_STORE_TEXT", False),
        flip_window=_int(env, "CHANGEWATCH_FLIP_WINDOW", DEFAULT_FLIP_WINDOW),
        learn_noise=_bool(env, "CHANGEWATCH_LEARN_NOISE", False),
        learn_templates=_bool(env, "CHANGEWATCH_LEARN_TEMPLATES", False),
    )


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def _bool(env: Mapping[str, str], name: str, default: bool) -> bool:
    raw = env.get(name)
    if not raw:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}={raw!r} is not a boolean: use one of {', '.join(_TRUE + _FALSE)}")


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if not raw:
        return default
    try:
        return int(raw.replace("_", ""))
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not an integer") from None


_HOST_FIELDS = {
    "drop_params": list,
    "keep_params": list,
    "strip_session_ids": bool,
    "fold_trailing_slash": bool,
    "keep_query_order": bool,
    "keep_routing_fragments": bool,
}


def load_canon_policy(path: str | os.PathLike[str]) -> CanonPolicy:
    """Read a canonicalisation policy from a TOML file (``CHANGEWATCH_CANON_POLICY``).

    Top-level keys are the defaults for every host (``max_length`` and the fields of
    :class:`~changewatch.urls.HostPolicy`); each ``[hosts."NAME"]`` table overrides them for
    one host (``".NAME"``: the domain and its subdomains). A file that cannot be read, is not
    TOML, or holds an unknown key or a wrong value raises :class:`ConfigError` naming it.
    """
    return canon_policy_from_mapping(_read_policy_file(path), source=str(path))


def _read_policy_file(path: str | os.PathLike[str]) -> dict[str, object]:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"canonicalisation policy {str(path)!r}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"canonicalisation policy {str(path)!r} is not TOML: {exc}") from exc


def _host_tables(
    data: Mapping[str, Any], source: str, allowed: Iterable[str]
) -> list[tuple[str, Mapping[str, Any], str]]:
    """The ``hosts`` sub-tables of a policy table, each checked: (host, table, where)."""
    hosts = data.get("hosts", {})
    if not isinstance(hosts, Mapping):
        raise ConfigError(f"{source}: 'hosts' must be a table of host tables")
    out = []
    for name, table in hosts.items():
        where = f"{source}: hosts.{name!r}"
        if not isinstance(table, Mapping):
            raise ConfigError(f"{where} must be a table")
        unknown = set(table) - set(allowed)
        if unknown:
            raise ConfigError(f"{where}: unknown key {sorted(unknown)[0]!r}")
        out.append((name, table, where))
    return out


def canon_policy_from_mapping(data: Mapping[str, object], source: str = "policy") -> CanonPolicy:
    """Build a :class:`CanonPolicy` from parsed TOML (see :func:`load_canon_policy`).

    A host table's booleans replace the defaults; its ``drop_params`` and ``keep_params``
    add to them (a host's ``keep_params`` entry wins over a default ``drop_params`` one, and
    the other way round).

    >>> policy = canon_policy_from_mapping({"hosts": {"shop.example": {"keep_query_order": True}}})
    >>> policy.rules_for("shop.example").keep_query_order
    True
    """
    unknown = set(data) - set(_HOST_FIELDS) - {"hosts", "max_length", "fingerprint"}
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(unknown)[0]!r}")
    top = {k: v for k, v in data.items() if k in _HOST_FIELDS}
    default = _host_policy(top, f"{source}", None)
    hosts = {
        name: _host_policy(table, where, default)
        for name, table, where in _host_tables(data, source, _HOST_FIELDS)
    }
    max_length = data.get("max_length", CanonPolicy().max_length)
    try:
        return CanonPolicy(default=default, hosts=hosts, max_length=max_length)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _host_policy(table: Mapping[str, object], where: str, base: HostPolicy | None) -> HostPolicy:
    """One HostPolicy from a TOML table, on top of ``base`` (the defaults) if given."""
    for key, kind in _HOST_FIELDS.items():
        if key in table and not isinstance(table[key], kind):
            wanted = "true or false" if kind is bool else "a list of strings"
            raise ConfigError(f"{where}: {key} must be {wanted}, got {table[key]!r}")
    fields: dict[str, object] = {}
    if base is not None:
        fields = {k: getattr(base, k) for k in _HOST_FIELDS}
    fields.update(
        {
            k: v
            for k, v in table.items()
            if k
            in (
                "strip_session_ids",
                "fold_trailing_slash",
                "keep_query_order",
                "keep_routing_fragments",
            )
        }
    )
    drop = {str(p).lower() for p in _strings(table.get("drop_params", []), where, "drop_params")}
    keep = {str(p).lower() for p in _strings(table.get("keep_params", []), where, "keep_params")}
    if base is not None:
        drop = (set(base.drop_params) - keep) | drop
        keep = (set(base.keep_params) - drop) | keep
    fields["drop_params"] = frozenset(drop)
    fields["keep_params"] = frozenset(keep)
    try:
        return HostPolicy(**fields)  # type: ignore[arg-type]
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _strings(value: object, where: str, key: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of strings, got {value!r}")
    return value


_FINGERPRINT_KEYS = ("ignore", "main", "volatile", "add_volatile", "boilerplate", "regions")


def load_fingerprint_policy(path: str | os.PathLike[str]) -> FingerprintPolicy | None:
    """Read the ``[fingerprint]`` table of the policy file (``CHANGEWATCH_CANON_POLICY``);
    ``None`` when it has none. See :func:`fingerprint_policy_from_mapping`."""
    table = _read_policy_file(path).get("fingerprint")
    if table is None:
        return None
    return fingerprint_policy_from_mapping(table, source=f"{path}: fingerprint")


def fingerprint_policy_from_mapping(
    table: object, source: str = "fingerprint"
) -> FingerprintPolicy:
    """Build a :class:`~changewatch.fingerprint.FingerprintPolicy` from a parsed TOML table.

    Keys: ``ignore`` (CSS selectors), ``main`` (a CSS selector), ``volatile`` (regular
    expressions, replacing the defaults), ``add_volatile`` (added to them), ``boilerplate``
    and ``regions`` (true or false). Each ``[fingerprint.hosts."NAME"]`` table (``".NAME"``:
    the domain and its subdomains) starts from these: its ``ignore`` and ``add_volatile`` add
    to them, its other keys replace them. An unknown key or a bad value raises
    :class:`ConfigError` naming it.

    >>> policy = fingerprint_policy_from_mapping(
    ...     {"ignore": [".ad"], "hosts": {"example.com": {"main": "article"}}})
    >>> policy.for_host("example.com").ignore, policy.for_host("example.com").main
    (('.ad',), 'article')
    """
    if not isinstance(table, Mapping):
        raise ConfigError(f"{source} must be a table")
    unknown = set(table) - set(_FINGERPRINT_KEYS) - {"hosts"}
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(unknown)[0]!r}")
    default = _fingerprint_rules(table, source, FingerprintPolicy())
    hosts = {
        name: _fingerprint_rules(host_table, where, default, add_ignore=True)
        for name, host_table, where in _host_tables(table, source, _FINGERPRINT_KEYS)
    }
    try:
        return FingerprintPolicy(
            ignore=default.ignore,
            main=default.main,
            volatile=default.volatile,
            boilerplate=default.boilerplate,
            regions=default.regions,
            hosts=hosts,
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None


def _fingerprint_rules(
    table: Mapping[str, object],
    where: str,
    base: FingerprintPolicy,
    *,
    add_ignore: bool = False,
) -> FingerprintPolicy:
    """One policy (without hosts) from a TOML table, on top of ``base``."""
    ignore = _strings(table.get("ignore", []), where, "ignore")
    volatile = tuple(_strings(table.get("volatile", list(base.volatile)), where, "volatile"))
    volatile += tuple(_strings(table.get("add_volatile", []), where, "add_volatile"))
    main = table.get("main", base.main)
    if main is not None and not isinstance(main, str):
        raise ConfigError(f"{where}: main must be a CSS selector string, got {main!r}")
    switches = {}
    for name in ("boilerplate", "regions"):
        value = table.get(name, getattr(base, name))
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {name} must be true or false, got {value!r}")
        switches[name] = value
    try:
        return FingerprintPolicy(
            ignore=(*base.ignore, *ignore) if add_ignore else tuple(ignore),
            main=main,
            volatile=volatile,
            boilerplate=switches["boilerplate"],
            regions=switches["regions"],
        )
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None


# -- logging (read by the CLI and by applications that call changewatch.logs) ----------------

LogFormat = Literal["kv", "json"]
LOG_FORMATS: tuple[LogFormat, ...] = ("kv", "json")
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


@dataclass(frozen=True, slots=True)
class LogSettings:
    """``CHANGEWATCH_LOG_FORMAT`` (``kv`` or ``json``; default ``kv``) and
    ``CHANGEWATCH_LOG_LEVEL`` (``DEBUG`` … ``ERROR``; default ``WARNING``)."""

    format: LogFormat = "kv"
    level: str = "WARNING"

    def __post_init__(self) -> None:
        if self.format not in LOG_FORMATS:
            raise ConfigError(
                f"CHANGEWATCH_LOG_FORMAT must be one of {', '.join(LOG_FORMATS)}, "
                f"got {self.format!r}"
            )
        if self.level not in LOG_LEVELS:
            raise ConfigError(
                f"CHANGEWATCH_LOG_LEVEL must be one of {', '.join(LOG_LEVELS)}, got {self.level!r}"
            )


#: Every ``CHANGEWATCH_*`` variable changewatch or its test suite reads.
KNOWN_VARIABLES = (
    "CHANGEWATCH_CANON_POLICY",
    "CHANGEWATCH_CORPUS",
    "CHANGEWATCH_DATABASE_URL",
    "CHANGEWATCH_FLIP_WINDOW",
    "CHANGEWATCH_LOG_FORMAT",
    "CHANGEWATCH_LOG_LEVEL",
    "CHANGEWATCH_MAX_PAGE_BYTES",
    "CHANGEWATCH_MINOR_DISTANCE",
    "CHANGEWATCH_SEEN_ON_ERROR",
    "CHANGEWATCH_SEEN_URL",
    "CHANGEWATCH_STORE_TEXT",
    "CHANGEWATCH_TEST_DATABASE_URL",
    "CHANGEWATCH_TEST_PARTITIONS",
    "CHANGEWATCH_TEST_REDIS_URL",
    "CHANGEWATCH_URL_POLICY",
)


def misspelt_variables(environ: Mapping[str, str] | None = None) -> list[tuple[str, str | None]]:
    """Each set ``CHANGEWATCH_*`` variable changewatch does not read, with the known name
    closest to it (``None`` when none is close): a typo is otherwise silently ignored.

    >>> misspelt_variables({"CHANGEWATCH_DATABSE_URL": "sqlite://", "CHANGEWATCH_SEEN_URL": ""})
    [('CHANGEWATCH_DATABSE_URL', 'CHANGEWATCH_DATABASE_URL')]
    """
    env = os.environ if environ is None else environ
    found = []
    for name in sorted(env):
        if name.startswith("CHANGEWATCH_") and name not in KNOWN_VARIABLES:
            close = difflib.get_close_matches(name, KNOWN_VARIABLES, n=1, cutoff=0.8)
            found.append((name, close[0] if close else None))
    return found


def terminal_columns(environ: Mapping[str, str] | None = None) -> int | None:
    """``COLUMNS`` as a positive width, or ``None`` when unset or not a number.

    >>> terminal_columns({"COLUMNS": "80"}), terminal_columns({"COLUMNS": "wide"})
    (80, None)
    """
    env = os.environ if environ is None else environ
    text = env.get("COLUMNS", "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def load_log_settings(environ: Mapping[str, str] | None = None) -> LogSettings:
    """Read the logging variables (from ``os.environ`` unless given).

    >>> load_log_settings({"CHANGEWATCH_LOG_FORMAT": "json"}).format
    'json'
    """
    env = os.environ if environ is None else environ
    return LogSettings(
        format=cast(LogFormat, (env.get("CHANGEWATCH_LOG_FORMAT") or "kv").lower()),
        level=(env.get("CHANGEWATCH_LOG_LEVEL") or "WARNING").upper(),
    )
