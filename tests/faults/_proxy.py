"""A TCP proxy on 127.0.0.1 that can cut its connections at a chosen message.

Stands in for a database server restart without touching the (shared) server: every client
connection is relayed to the upstream; once :meth:`TcpProxy.arm` is called, the first
client→server chunk containing ``pattern`` cuts that connection — ``before`` the chunk is
forwarded (the server never sees it, as when it goes down first), or ``after`` it is
forwarded and the server's answer is swallowed (the server did the work, the client never
hears of it).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
from typing import Literal

Mode = Literal["before", "after"]


class TcpProxy:
    """Relay ``127.0.0.1:port`` → ``upstream``; cut a connection on an armed pattern."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._pattern: bytes | None = None
        self._mode: Mode = "before"
        self.cuts = 0
        self._closed = threading.Event()
        self._threads: list[threading.Thread] = []
        accept = threading.Thread(target=self._accept, daemon=True)
        accept.start()
        self._threads.append(accept)

    def arm(self, pattern: bytes, mode: Mode = "before") -> None:
        """Cut the next connection that sends ``pattern`` (once)."""
        with self._lock:
            self._pattern, self._mode = pattern, mode

    def _take(self, chunk: bytes) -> Mode | None:
        with self._lock:
            if self._pattern is not None and self._pattern in chunk:
                self._pattern = None
                self.cuts += 1
                return self._mode
        return None

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            relay = threading.Thread(target=self._relay, args=(client, server), daemon=True)
            relay.start()
            self._threads.append(relay)

    def _relay(self, client: socket.socket, server: socket.socket) -> None:
        sel = selectors.DefaultSelector()
        sel.register(client, selectors.EVENT_READ, server)
        sel.register(server, selectors.EVENT_READ, client)
        try:
            while not self._closed.is_set():
                for key, _ in sel.select(timeout=0.2):
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    chunk = source.recv(65536)
                    if not chunk:
                        return
                    cut = self._take(chunk) if source is client else None
                    if cut == "before":
                        return
                    key.data.sendall(chunk)
                    if cut == "after":
                        server.settimeout(10)
                        server.recv(65536)  # the server answered; the client never hears it
                        return
        except OSError:
            return
        finally:
            sel.close()
            for sock in (client, server):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()

    def close(self) -> None:
        """Stop accepting and close every connection."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept() on Linux
        self._listener.close()
        for thread in self._threads[1:]:
            thread.join(timeout=5)
        self._threads[0].join(timeout=5)
