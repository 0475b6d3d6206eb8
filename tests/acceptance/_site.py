"""A small website for the Scrapy acceptance tests, served on 127.0.0.1 from a thread.

:class:`CountingSite` serves ``pages`` (path → HTML ``str``, changeable between crawls) and
counts every request per path, so a test can assert that no URL was fetched twice; paths in
``statuses`` are answered with that error status, paths in ``dropped`` get their connection
closed without an answer.
:func:`render` makes a page with the noise real sites add to each response — a script nonce,
a hidden CSRF token, a "generated at" time stamp — which changewatch's normalisation ignores.
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

#: Longest wait of a gated request for the other gate paths to be requested.
GATE_TIMEOUT_S = 20.0

TEXTS = (
    "river",
    "granite",
    "lantern",
    "orchard",
    "harbour",
    "meadow",
    "copper",
    "thistle",
    "falcon",
    "juniper",
)


def body_text(n: int, words: int = 60) -> str:
    """A paragraph that differs a lot from page to page (so pages are not near-duplicates)."""
    return " ".join(
        f"{TEXTS[(n * 7 + i * (n % 5 + 3)) % len(TEXTS)]}{(n * 31 + i) % 97}" for i in range(words)
    )


def render(title: str, text: str, links: list[str], noise: int) -> str:
    """One page: visible title, text and links, plus per-render noise numbered ``noise``."""
    anchors = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title>"
        f"<script nonce='n{noise:08x}'>window.csrf='{noise * 7919:x}';</script></head><body>"
        f"<form><input type='hidden' name='csrf' value='tok{noise * 104729:x}'></form>"
        f"<h1>{title}</h1><p>{text}</p><ul>{anchors}</ul>"
        f"<footer>Generated 2026-11-{1 + noise % 28:02d} {noise % 24:02d}:{noise % 60:02d}:07 UTC"
        "</footer></body></html>"
    )


class CountingSite:
    """A threaded HTTP server over a mutable ``pages`` dict that counts requests per path.

    ``delay_s`` is slept before each answer, so concurrent crawlers overlap in time. With
    ``gate`` (paths), no request is answered until every gate path has been requested (or
    ``GATE_TIMEOUT_S`` passed): crawlers started together then really crawl together.
    """

    def __init__(
        self,
        pages: dict[str, str] | None = None,
        *,
        delay_s: float = 0.0,
        gate: frozenset[str] = frozenset(),
    ) -> None:
        self.pages: dict[str, str] = dict(pages or {})
        #: Paths answered with an error status instead of their page (changeable).
        self.statuses: dict[str, int] = {}
        #: Paths whose connection is closed without any answer (a download error).
        self.dropped: set[str] = set()
        self.counts: Counter[str] = Counter()
        self.delay_s = delay_s
        self._gate = gate
        self._opened = threading.Event()
        if not gate:
            self._opened.set()
        self._lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path
                with site._lock:
                    site.counts[path] += 1
                    page = site.pages.get(path)
                    status = site.statuses.get(path)
                    dropped = path in site.dropped
                    if site._gate <= set(site.counts):
                        site._opened.set()
                site._opened.wait(GATE_TIMEOUT_S)
                if site.delay_s:
                    time.sleep(site.delay_s)
                if dropped:
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if page is None or status is not None:
                    self.send_error(status or 404)
                    return
                data = page.encode("utf-8")
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: object) -> None:
                del format, args

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset_counts(self) -> None:
        """Forget the request counts (between crawls)."""
        with self._lock:
            self.counts.clear()

    def twice(self) -> dict[str, int]:
        """Paths requested more than once."""
        with self._lock:
            return {path: n for path, n in self.counts.items() if n > 1}

    def __enter__(self) -> CountingSite:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
