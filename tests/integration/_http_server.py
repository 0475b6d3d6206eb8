"""A real threaded HTTP server on 127.0.0.1 for the sitemap fetch and walk tests.

Routes are keyed by path, or by ``host + path`` for a route that only one virtual host
serves (tests point fake host names at 127.0.0.1 through ``SafeClient(resolve=...)``).
Every request is logged with its Host and headers, so tests can count hits.
"""

from __future__ import annotations

import http.server
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What a route answers."""

    status: int = 200
    body: bytes = b""
    headers: Mapping[str, str] = field(default_factory=dict)
    #: Seconds to wait before sending the status line.
    delay: float = 0.0
    #: When set, the body is sent one byte at a time with this many seconds between bytes.
    drip: float = 0.0
    #: Close the connection without answering (after ``delay``).
    abort: bool = False


@dataclass(frozen=True)
class Seen:
    """One request the server received."""

    host: str
    path: str
    headers: dict[str, str]


Route = Callable[[Seen], Reply]


class LocalSite:
    """The server's routes, request log and base URL."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.base = f"http://127.0.0.1:{port}"
        self.routes: dict[str, Route | Reply] = {}
        self.log: list[Seen] = []
        self.lock = threading.Lock()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def hits(self, path: str) -> int:
        with self.lock:
            return sum(1 for seen in self.log if seen.path == path)

    def reply(self, seen: Seen) -> Reply:
        route = self.routes.get(seen.host + seen.path) or self.routes.get(seen.path)
        if route is None:
            return Reply(404, b"not found")
        return route if isinstance(route, Reply) else route(seen)


def _handler(site: LocalSite) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            host = (self.headers.get("Host") or "").rsplit(":", 1)[0]
            seen = Seen(host, self.path, {k.lower(): v for k, v in self.headers.items()})
            with site.lock:
                site.log.append(seen)
            reply = site.reply(seen)
            try:
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.abort:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(reply.status)
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if reply.drip:
                    for index in range(len(reply.body)):
                        self.wfile.write(reply.body[index : index + 1])
                        self.wfile.flush()
                        time.sleep(reply.drip)
                else:
                    self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (timeouts are tested) is not a server failure


class _Server6(_Server):
    address_family = socket.AF_INET6


def serve(address: str = "127.0.0.1") -> Iterator[LocalSite]:
    """Run a server on ``address`` in a thread for the duration of a fixture."""
    kind = _Server6 if ":" in address else _Server
    server = kind((address, 0), http.server.BaseHTTPRequestHandler)
    site = LocalSite(server.server_address[1])
    if ":" in address:
        site.base = f"http://[{address}]:{site.port}"
    server.RequestHandlerClass = _handler(site)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
