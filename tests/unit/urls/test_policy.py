"""CanonPolicy and canon_version: each per-host rule, TOML loading, refusals naming the problem."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from changewatch.config import canon_policy_from_mapping, load_canon_policy, load_settings
from changewatch.errors import ConfigError, InvalidURLError
from changewatch.urls import (
    CANON_RULES_VERSION,
    CANON_VERSION,
    DEFAULT_POLICY,
    SESSION_ID_PARAMETERS,
    CanonPolicy,
    HostPolicy,
    canon_version,
    canonicalise,
    url_digest,
)


def _policy(**rules: Any) -> CanonPolicy:
    return CanonPolicy(default=HostPolicy(**rules))


# --- each rule ------------------------------------------------------------------------------


def test_default_policy_is_the_code_rules() -> None:
    """No policy, DEFAULT_POLICY and CanonPolicy() canonicalise alike and share a version."""
    url = "http://example.com/a/;jsessionid=1?sid=2&b=1&a=2#!/route"
    assert canonicalise(url) == canonicalise(url, DEFAULT_POLICY) == canonicalise(url, None)
    assert canonicalise(url) == "http://example.com/a/;jsessionid=1?a=2&b=1&sid=2"
    assert canon_version() == canon_version(CanonPolicy()) == CANON_VERSION == CANON_RULES_VERSION


def test_session_ids_kept_by_default_stripped_on_request() -> None:
    """Session ids stay by default; strip_session_ids removes keys and ;jsessionid= params."""
    url = "http://example.com/cart;JSESSIONID=A1B2?PHPSESSID=x&sid=9&cfid=1&cftoken=2&item=5"
    assert canonicalise(url) == (
        "http://example.com/cart;JSESSIONID=A1B2?PHPSESSID=x&cfid=1&cftoken=2&item=5&sid=9"
    )
    stripped = canonicalise(url, _policy(strip_session_ids=True))
    assert stripped == "http://example.com/cart?item=5"
    assert {"jsessionid", "phpsessid", "sid"} <= SESSION_ID_PARAMETERS


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://e.com/a;jsessionid=1/b", "http://e.com/a/b"),
        ("http://e.com/;jsessionid=1/b", "http://e.com/b"),
        ("http://e.com/a/.;jsessionid=1/b", "http://e.com/a/b"),
        ("http://e.com/a/..;jsessionid=1/b", "http://e.com/b"),
        ("http://e.com/a/x;jsessionid=1;v=2", "http://e.com/a/x;v=2"),
    ],
)
def test_jsessionid_path_parameter_stripped_without_leaving_dot_segments(
    url: str, expected: str
) -> None:
    """Stripping ;jsessionid= never leaves '//' or a dot segment behind (stays idempotent)."""
    policy = _policy(strip_session_ids=True)
    assert canonicalise(url, policy) == expected
    assert canonicalise(expected, policy) == expected


def test_trailing_slash_distinct_by_default_folded_on_request() -> None:
    """/a and /a/ are different pages unless fold_trailing_slash; the root stays '/'."""
    assert canonicalise("http://e.com/a/") != canonicalise("http://e.com/a")
    policy = _policy(fold_trailing_slash=True)
    assert canonicalise("http://e.com/a/", policy) == "http://e.com/a"
    assert canonicalise("http://e.com/a//?x=1", policy) == "http://e.com/a?x=1"
    assert canonicalise("http://e.com/", policy) == "http://e.com/"
    assert canonicalise("http://e.com", policy) == "http://e.com/"


def test_keep_query_order_still_drops_tracking() -> None:
    """keep_query_order keeps the pairs' order; tracking keys still go."""
    policy = _policy(keep_query_order=True)
    assert canonicalise("http://e.com/?b=1&utm_source=x&a=2", policy) == "http://e.com/?b=1&a=2"


@pytest.mark.parametrize(
    ("fragment", "kept"),
    [("#!/inbox/1", "#!/inbox/1"), ("#/about", "#/about"), ("#top", ""), ("#", ""), ("#!", "#!")],
)
def test_routing_fragments_kept_on_request(fragment: str, kept: str) -> None:
    """keep_routing_fragments keeps '#!' and '#/' fragments only; others still go."""
    policy = _policy(keep_routing_fragments=True)
    assert canonicalise(f"http://e.com/app{fragment}") == "http://e.com/app"
    result = canonicalise(f"http://e.com/app?b=1{fragment}", policy)
    assert result == f"http://e.com/app?b=1{kept}"
    assert canonicalise(result, policy) == result


def test_routing_fragment_escapes_normalised() -> None:
    """A kept fragment gets the same escape rules as path and query."""
    policy = _policy(keep_routing_fragments=True)
    assert (
        canonicalise("http://e.com/#/caf%c3%a9/%7e x", policy) == "http://e.com/#/caf%C3%A9/~%20x"
    )


def test_extra_drop_params_exact_and_prefix() -> None:
    """drop_params adds keys (case-insensitive) and 'name*' prefixes to the deny-list."""
    policy = _policy(drop_params=frozenset({"Ref", "trk_*"}))
    url = "http://e.com/?REF=a&trk_id=1&TRK_x=2&trk=3&q=1"
    assert canonicalise(url, policy) == "http://e.com/?q=1&trk=3"


def test_keep_params_override_the_deny_list() -> None:
    """keep_params exempts a key from the tracking list and from session-id stripping."""
    policy = _policy(keep_params=frozenset({"_ga", "sid"}), strip_session_ids=True)
    url = "http://e.com/?_ga=1&sid=2&gclid=3&phpsessid=4"
    assert canonicalise(url, policy) == "http://e.com/?_ga=1&sid=2"


def test_per_host_rules_exact_and_suffix() -> None:
    """Exact host keys match that host; '.domain' keys match it and subdomains, longest first."""
    policy = CanonPolicy(
        hosts={
            "shop.example": HostPolicy(keep_query_order=True),
            ".example": HostPolicy(fold_trailing_slash=True),
            ".deep.example": HostPolicy(keep_routing_fragments=True),
        }
    )
    assert canonicalise("http://shop.example/a/?b&a", policy) == "http://shop.example/a/?b&a"
    assert canonicalise("http://x.shop.example/a/", policy) == "http://x.shop.example/a"
    assert canonicalise("http://example/a/", policy) == "http://example/a"
    assert canonicalise("http://a.deep.example/a/#/r", policy) == "http://a.deep.example/a/#/r"
    assert canonicalise("http://other.test/a/?b&a", policy) == "http://other.test/a/?a&b"
    assert canonicalise("http://notexample/a/", policy) == "http://notexample/a/"


def test_policy_host_keys_are_canonicalised() -> None:
    """Host keys are lower-cased and IDNA-encoded, so any spelling of a host matches."""
    policy = CanonPolicy(hosts={"Bücher.Example.": HostPolicy(keep_query_order=True)})
    assert list(policy.hosts) == ["xn--bcher-kva.example"]
    assert canonicalise("http://BÜCHER.example/?b&a", policy) == "http://xn--bcher-kva.example/?b&a"


def test_policy_max_length() -> None:
    """The policy's max_length caps URLs; the keyword argument overrides it."""
    policy = CanonPolicy(max_length=30)
    with pytest.raises(InvalidURLError, match="longer than 30"):
        canonicalise("http://example.com/" + "a" * 20, policy)
    assert canonicalise("http://example.com/" + "a" * 20, policy, max_length=100)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: HostPolicy(drop_params=frozenset({"a"}), keep_params=frozenset({"A"})), "both"),
        (lambda: HostPolicy(drop_params="utm"), "list of strings"),  # type: ignore[arg-type]
        (lambda: HostPolicy(drop_params=frozenset({""})), "non-empty"),
        (lambda: HostPolicy(drop_params=frozenset({"a*b"})), "'*'"),
        (lambda: HostPolicy(keep_params=frozenset({"a*"})), "'*'"),
        (lambda: HostPolicy(drop_params=frozenset({"a=b"})), "plain query key"),
        (lambda: HostPolicy(fold_trailing_slash="yes"), "true or false"),  # type: ignore[arg-type]
        (lambda: CanonPolicy(max_length=0), "max_length"),
        (lambda: CanonPolicy(hosts={"exa mple.com": HostPolicy()}), "not a valid host"),
        (lambda: CanonPolicy(hosts={"example.com:8080": HostPolicy()}), "host name alone"),
        (lambda: CanonPolicy(hosts={"example.com/x": HostPolicy()}), "host name alone"),
        (lambda: CanonPolicy(hosts={"": HostPolicy()}), "non-empty"),
        (lambda: CanonPolicy(hosts={"a.com": True}), "HostPolicy"),  # type: ignore[dict-item]
    ],
)
def test_bad_policy_values_raise_config_error(build: Any, message: str) -> None:
    """Every bad policy value raises ConfigError saying what is wrong."""
    with pytest.raises(ConfigError, match=message):
        build()


# --- canon_version --------------------------------------------------------------------------


def test_canon_version_names_the_policy() -> None:
    """Different policies get different 15-bit versions ≥ 1024; equal policies the same one."""
    a = _policy(fold_trailing_slash=True)
    b = _policy(fold_trailing_slash=True, keep_query_order=True)
    versions = {canon_version(a), canon_version(b), canon_version()}
    assert len(versions) == 3
    for policy in (a, b):
        assert 1024 <= canon_version(policy) <= 32767
    assert canon_version(a) == canon_version(_policy(fold_trailing_slash=True))


def test_canon_version_ignores_order_length_cap_and_host_spelling() -> None:
    """Set order, the length cap, host spelling and host entries equal to the default do not
    change the version: only what changes canonical forms does."""
    one = CanonPolicy(
        default=HostPolicy(drop_params=frozenset({"a", "b"})),
        hosts={"Example.COM": HostPolicy(keep_query_order=True)},
    )
    two = CanonPolicy(
        default=HostPolicy(drop_params=frozenset({"B", "a"})),
        hosts={
            "example.com": HostPolicy(keep_query_order=True),
            "same.example": HostPolicy(drop_params=frozenset({"a", "b"})),
        },
        max_length=100_000,
    )
    assert canon_version(one) == canon_version(two)
    assert canon_version(CanonPolicy(hosts={"x.example": HostPolicy()})) == CANON_RULES_VERSION


def test_canon_version_golden() -> None:
    """The derived version is pinned: it is stored in every snapshot row."""
    assert canon_version(_policy(fold_trailing_slash=True)) == 8526


# --- TOML loading ---------------------------------------------------------------------------

POLICY_TOML = """
max_length = 16384
strip_session_ids = false
drop_params = ["ref_src", "trk_*"]

[hosts."shop.example"]
keep_query_order = true
strip_session_ids = true
keep_params = ["ref_src"]

[hosts.".app.example"]
keep_routing_fragments = true
fold_trailing_slash = true
drop_params = ["v"]
"""


def test_toml_policy_loaded(tmp_path: Path) -> None:
    """A TOML file sets defaults and per-host tables; host tables inherit and extend them."""
    path = tmp_path / "canon.toml"
    path.write_text(POLICY_TOML, encoding="utf-8")
    policy = load_canon_policy(path)
    assert policy.max_length == 16384
    assert policy.default == HostPolicy(drop_params=frozenset({"ref_src", "trk_*"}))
    shop = policy.rules_for("shop.example")
    assert shop.keep_query_order
    assert shop.strip_session_ids
    assert shop.drop_params == frozenset({"trk_*"})
    assert shop.keep_params == frozenset({"ref_src"})
    app = policy.rules_for("m.app.example")
    assert app.drop_params == frozenset({"ref_src", "trk_*", "v"})
    url = "http://shop.example/p?z=1&ref_src=t&trk_a=1&sid=3&a=2"
    assert canonicalise(url, policy) == "http://shop.example/p?z=1&ref_src=t&a=2"
    assert canonicalise("http://m.app.example/x/?v=2#/r", policy) == "http://m.app.example/x#/r"


def test_settings_read_canon_policy_from_environment(tmp_path: Path) -> None:
    """CHANGEWATCH_CANON_POLICY names the TOML file; unset means no policy."""
    path = tmp_path / "canon.toml"
    path.write_text(POLICY_TOML, encoding="utf-8")
    settings = load_settings({"CHANGEWATCH_CANON_POLICY": str(path)})
    assert settings.canon_policy == load_canon_policy(path)
    assert load_settings({}).canon_policy is None
    assert load_settings({"CHANGEWATCH_CANON_POLICY": ""}).canon_policy is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("drop_params = [", "not TOML"),
        ("fold_trailing_slash = 'yes'", "fold_trailing_slash must be true or false"),
        ("drop_params = 'utm'", "drop_params must be a list of strings"),
        ("drop_params = [1]", "drop_params must be a list of strings"),
        ("keep_params = ['a*']", "'*'"),
        ("strip_sessions = true", "unknown key 'strip_sessions'"),
        ("max_length = 'big'", "max_length"),
        ("max_length = -1", "max_length"),
        ("hosts = 3", "'hosts' must be a table"),
        ("[hosts]\n'a.com' = 1", "hosts.'a.com' must be a table"),
        ("[hosts.'a.com']\nkeep_order = true", "hosts.'a.com': unknown key 'keep_order'"),
        ("[hosts.'a b']\nkeep_query_order = true", "not a valid host"),
        ("[hosts.'a.com']\ndrop_params = ['x']\nkeep_params = ['X']", "both"),
    ],
)
def test_bad_toml_raises_config_error_naming_the_problem(
    tmp_path: Path, text: str, message: str
) -> None:
    """A bad policy file raises ConfigError naming the file and the offending key or value."""
    path = tmp_path / "canon.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        load_canon_policy(path)
    assert str(path) in str(info.value)


def test_missing_policy_file_raises_config_error(tmp_path: Path) -> None:
    """A policy file that cannot be read is a ConfigError naming it, also via the environment."""
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError, match=r"nope\.toml"):
        load_settings({"CHANGEWATCH_CANON_POLICY": str(missing)})


def test_mapping_form_equals_dataclass_form() -> None:
    """canon_policy_from_mapping builds the same value as the dataclasses."""
    built = canon_policy_from_mapping(
        {"keep_query_order": True, "hosts": {"a.example": {"fold_trailing_slash": True}}}
    )
    expected = CanonPolicy(
        default=HostPolicy(keep_query_order=True),
        hosts={"a.example": HostPolicy(keep_query_order=True, fold_trailing_slash=True)},
    )
    assert built == expected


# --- properties under any policy ------------------------------------------------------------

_policies = st.builds(
    HostPolicy,
    drop_params=st.frozensets(st.sampled_from(["a", "b", "x_*", "ref"]), max_size=2),
    strip_session_ids=st.booleans(),
    fold_trailing_slash=st.booleans(),
    keep_query_order=st.booleans(),
    keep_routing_fragments=st.booleans(),
).map(lambda rules: CanonPolicy(default=rules))
_parts = st.lists(
    st.sampled_from(
        ["a", "b", ".", "..", "", ";jsessionid=1", ".;jsessionid=2", "%2e", "x y", "%7e", "é"]
    ),
    max_size=5,
).map("/".join)
_queries = st.lists(
    st.sampled_from(["a=1", "b=", "x_y=2", "sid=3", "ref=4", "utm_source=5", "c", "&", "%41=1"]),
    max_size=5,
).map("&".join)
_fragments = st.sampled_from(["", "#top", "#!/a/b", "#/r?x=1", "#/%7e", "#!"])


@settings(max_examples=300, deadline=None)
@given(_policies, _parts, _queries, _fragments)
def test_idempotent_under_any_policy(
    policy: CanonPolicy, path: str, query: str, fragment: str
) -> None:
    """Under any policy, the canonical form is a fixed point and digests agree."""
    url = f"http://Example.com/{path}?{query}{fragment}"
    canonical = canonicalise(url, policy)
    assert canonicalise(canonical, policy) == canonical
    assert url_digest(url, policy) == url_digest(canonical, policy)


def test_policies_are_frozen() -> None:
    """Policies are values: frozen, comparable."""
    policy = _policy(fold_trailing_slash=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.max_length = 1  # type: ignore[misc]
    assert policy == _policy(fold_trailing_slash=True)


def test_remembered_key_verdicts_are_bounded_and_change_nothing() -> None:
    """Each HostPolicy remembers which keys it drops, up to a bound; answers stay the same."""
    from changewatch.urls.policy import _DROP_VERDICTS_LIMIT

    rules = HostPolicy(drop_params=frozenset({"x*"}), keep_params=frozenset({"utm_keep"}))
    policy = CanonPolicy(default=rules)
    url = "http://example.com/?b=1&UTM_Source=2&Xa=3&utm_keep=4&a_=5&gclid=6"
    first = canonicalise(url, policy)
    assert first == "http://example.com/?a_=5&b=1&utm_keep=4"
    for i in range(_DROP_VERDICTS_LIMIT + 50):  # more distinct keys than it keeps
        canonicalise(f"http://example.com/?k_{i}=1", policy)
    assert len(rules._dropped) <= _DROP_VERDICTS_LIMIT
    assert canonicalise(url, policy) == first
    assert _DROP_VERDICTS_LIMIT == 10_000
