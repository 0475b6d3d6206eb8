"""A private, disposable redis-server for fault tests (never the shared one on 6379)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
import redis

START_TIMEOUT_S = 15


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrivateRedis:
    """``redis-server`` on a free 127.0.0.1 port, AOF with ``appendfsync always`` in ``dir``."""

    def __init__(self, directory: Path) -> None:
        exe = shutil.which("redis-server")
        if exe is None:
            if os.environ.get("CI", "").lower() == "true":
                pytest.fail("redis-server is not installed (needed by the fault suite on CI)")
            pytest.skip("redis-server is not installed")
        self.exe = exe
        self.dir = directory
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start (or restart, replaying the AOF) and wait until it answers PING."""
        self.proc = subprocess.Popen(
            [
                self.exe,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                "--appendonly", "yes",
                "--appendfsync", "always",
                "--dir", str(self.dir),
                "--daemonize", "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        client = redis.Redis(port=self.port, socket_connect_timeout=1)
        deadline = time.monotonic() + START_TIMEOUT_S
        try:
            while True:
                try:
                    if client.ping():
                        return
                except redis.exceptions.BusyLoadingError:
                    pass
                except redis.exceptions.ConnectionError:
                    pass
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"private redis-server on {self.port} did not start")
                time.sleep(0.05)
        finally:
            client.close()

    def kill(self) -> None:
        """``kill -9``: no shutdown, no final fsync beyond what AOF already did."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=START_TIMEOUT_S)
        self.proc = None
