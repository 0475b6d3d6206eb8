"""Best-of-N timing for the linear-time checks (garbage collection paused while timing)."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Callable
from typing import Any

#: 16× the input may cost at most this many times the time: linear code lands near 16× (up to
#: ~60× on a loaded machine with cold caches), quadratic code at 256×.
MAX_GROWTH = 100
SCALE = 16


def best_of(
    fn: Callable[[Any], object],
    arg: Any,
    repeats: int = 3,
    expected: tuple[type[BaseException], ...] = (),
) -> float:
    """The fastest of ``repeats`` calls ``fn(arg)``, in seconds; ``expected`` errors count."""
    best = float("inf")
    gc.collect()
    for _ in range(repeats):
        gc.disable()  # a collection pause is not the code's cost
        try:
            started = time.perf_counter()
            with contextlib.suppress(*expected):
                fn(arg)
            best = min(best, time.perf_counter() - started)
        finally:
            gc.enable()
    return best


def growth(
    fn: Callable[[Any], object],
    shape: Callable[[int], Any],
    expected: tuple[type[BaseException], ...] = (),
    *,
    min_seconds: float = 0.003,
    start: int = 250,
    cap: int = 1 << 15,
    large_repeats: int = 2,
) -> tuple[int, float, float]:
    """``(n, t(n), t(SCALE·n))`` with n doubled from ``start`` until ``t(n) ≥ min_seconds``.

    Timing inputs that take milliseconds, not microseconds, keeps timer and scheduler noise
    out of the ratio.
    """
    n = start
    while True:
        t_small = best_of(fn, shape(n), 3, expected)
        if t_small >= min_seconds or n >= cap:
            break
        n *= 2
    return n, t_small, best_of(fn, shape(SCALE * n), large_repeats, expected)


#: Measurements :func:`assert_linear` takes before it fails: the machine is shared, and a
#: burst of load lasting through the large input's repeats (CI once: 0.22 s → 0.64 s) can
#: pass :data:`MAX_GROWTH` once; quadratic code passes it every time (256×).
ATTEMPTS = 3


def assert_linear(
    fn: Callable[[Any], object],
    shape: Callable[[int], Any],
    expected: tuple[type[BaseException], ...] = (),
    *,
    label: str = "",
    **options: Any,
) -> None:
    """Fail unless :func:`growth` of ``fn`` over ``shape`` stays under :data:`MAX_GROWTH`
    in one of :data:`ATTEMPTS` measurements; the message lists every one.

    A page that crosses a threshold of the guard between n and 16·n (the nesting model reads
    pages past about 4,096 ``<``: about 2.2× the cost a tag) grows by that step once, which
    leaves less of the margin for load, hence the attempts rather than a wider margin.
    """
    seen: list[str] = []
    for _ in range(ATTEMPTS):
        n, t_small, t_large = growth(fn, shape, expected, **options)
        if t_large / t_small < MAX_GROWTH:
            return
        seen.append(f"n={n} {t_small:.5f}s → {t_large:.5f}s ({t_large / t_small:.0f}×)")
    raise AssertionError(
        f"{label}: 16× the input took ≥ {MAX_GROWTH}× the time: " + "; ".join(seen)
    )
