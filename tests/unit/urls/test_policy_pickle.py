"""A canonicalisation policy crosses to worker processes: it pickles and deep-copies."""

from __future__ import annotations

import copy
import pickle
from concurrent.futures import ProcessPoolExecutor

from changewatch.urls import CanonPolicy, HostPolicy, canonicalise

POLICY = CanonPolicy(
    hosts={".shop.example": HostPolicy(keep_query_order=True), "a.example": HostPolicy()},
    max_length=4096,
)


def test_a_policy_pickles_and_deep_copies_to_an_equal_policy() -> None:
    for clone in (pickle.loads(pickle.dumps(POLICY)), copy.deepcopy(POLICY), copy.copy(POLICY)):
        assert clone == POLICY
        assert clone.rules_for("www.shop.example") == POLICY.rules_for("www.shop.example")
        url = "http://www.shop.example/?b=1&a=2"
        assert canonicalise(url, clone) == canonicalise(url, POLICY) == url


def _canonical(url: str, policy: CanonPolicy) -> str:
    return canonicalise(url, policy)


def test_a_policy_reaches_another_process() -> None:
    with ProcessPoolExecutor(1) as pool:
        assert pool.submit(_canonical, "http://x.shop.example/?b=1&a=2", POLICY).result() == (
            "http://x.shop.example/?b=1&a=2"
        )
