"""Child processes of test_first_open: open a store, or die by SIGKILL while creating one.

The children are forked from the test process (which has changewatch, SQLAlchemy and Alembic
imported already), so 24 of them start in milliseconds; each leaves with ``os._exit``.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from changewatch.store import create_engine, open_store
from changewatch.store.migrate import upgrade

__all__ = [
    "open_in_children",
    "open_killed_after",
    "open_then_die_after_statements",
    "upgrade_in_children",
]

TIMEOUT_S = 120


def _open(url: str, start: Event, out: Connection) -> None:
    try:
        start.wait(TIMEOUT_S)
        open_store(url).close()
        out.send(("ok", ""))
    except BaseException:
        out.send(("error", traceback.format_exc()))
    finally:
        out.close()
        os._exit(0)


def open_in_children(url: str, count: int) -> list[tuple[str, str]]:
    """``count`` forked processes open the store at ``url`` at once; their outcomes."""
    return _in_children(_open, url, count)


def _in_children(
    target: Callable[[str, Event, Connection], None], url: str, count: int
) -> list[tuple[str, str]]:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    pipes = []
    procs = []
    for _ in range(count):
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=target, args=(url, start, send))
        proc.start()
        send.close()
        pipes.append(receive)
        procs.append(proc)
    start.set()
    outcomes: list[tuple[str, str]] = []
    for receive, proc in zip(pipes, procs, strict=True):
        if receive.poll(TIMEOUT_S):
            outcomes.append(receive.recv())
        else:
            outcomes.append(("error", "no answer"))
        proc.join(TIMEOUT_S)
    return outcomes


def _die_after(url: str, statements: int) -> None:
    seen = 0

    def count(*_args: Any) -> None:
        nonlocal seen
        seen += 1
        if seen >= statements:
            os.kill(os.getpid(), signal.SIGKILL)

    event.listen(sa.Engine, "after_cursor_execute", count)
    try:
        open_store(url).close()
    finally:
        os._exit(3)


def open_then_die_after_statements(url: str, statements: int) -> int:
    """A forked process opens ``url`` and SIGKILLs itself right after its ``statements``-th
    SQL statement; its exit code (``-SIGKILL`` when the kill landed, 3 if it finished)."""
    ctx = multiprocessing.get_context("fork")
    proc = ctx.Process(target=_die_after, args=(url, statements))
    proc.start()
    proc.join(TIMEOUT_S)
    assert proc.exitcode is not None, "the child did not finish"
    return proc.exitcode


def _open_quietly(url: str, start: Event) -> None:
    try:
        start.wait(TIMEOUT_S)
        open_store(url).close()
    finally:
        os._exit(0)


def open_killed_after(url: str, delay_s: float) -> int:
    """A forked process opens ``url``; it is sent SIGKILL ``delay_s`` after it starts. Its
    exit code (``-SIGKILL`` if it was still at work)."""
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    proc = ctx.Process(target=_open_quietly, args=(url, start))
    proc.start()
    start.set()
    proc.join(delay_s)
    if proc.is_alive():
        os.kill(proc.pid, signal.SIGKILL)  # type: ignore[arg-type]
    proc.join(TIMEOUT_S)
    assert proc.exitcode is not None, "the child did not finish"
    return proc.exitcode


def _upgrade(url: str, start: Event, out: Connection) -> None:
    engine = None
    try:
        start.wait(TIMEOUT_S)
        engine = create_engine(url)
        upgrade(engine)
        out.send(("ok", ""))
    except BaseException:
        out.send(("error", traceback.format_exc()))
    finally:
        if engine is not None:
            engine.dispose()
        out.close()
        os._exit(0)


def upgrade_in_children(url: str, count: int) -> list[tuple[str, str]]:
    """``count`` forked processes run ``upgrade`` on ``url`` at once; their outcomes."""
    return _in_children(_upgrade, url, count)
