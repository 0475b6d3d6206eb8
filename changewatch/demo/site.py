"""The demo's bundled website: rendering its pages, changing them, and serving them locally.

Pages are rendered from :mod:`changewatch.demo.content`. Every render carries the noise real
sites add to each response — a fresh script nonce, a fresh CSRF token, a build comment and
different indentation — so two renders of the same page never have the same bytes, while
their visible text is identical. :func:`first_site` is the site as first crawled;
:func:`changed_site` is the same site a week later, with one change of each kind.

:class:`DemoServer` serves a site on ``127.0.0.1`` at an ephemeral port from a background
thread (``http.server``); pages missing from the site answer ``404``.
"""

from __future__ import annotations

import hashlib
import html
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType

from changewatch.demo.content import (
    EDIT_NEW,
    EDIT_OLD,
    NEWS_ADDED,
    NEWS_AUTUMN,
    NEWS_SPRING,
    PAGES,
    RIDES_REWRITTEN,
)

__all__ = [
    "DUPLICATE_PATH",
    "EDITED_PATH",
    "HOME_PATH",
    "REMOVED_PATH",
    "REWRITTEN_PATH",
    "DemoServer",
    "Site",
    "changed_site",
    "first_site",
    "render_page",
]

HOME_PATH = "/"
EDITED_PATH = "/guides/maintenance.html"
REWRITTEN_PATH = "/rides.html"
REMOVED_PATH = "/news/spring-reliability-ride.html"
ADDED_PATH = NEWS_ADDED[0]
#: A printable copy of the membership page: the same text at another URL.
DUPLICATE_PATH = "/print/membership.html"
DUPLICATED_PATH = "/membership.html"

_NAV = (
    ("/", "Home"),
    ("/about.html", "About"),
    ("/rides.html", "Rides"),
    ("/guides/maintenance.html", "Maintenance"),
    ("/guides/routes.html", "Routes"),
    ("/membership.html", "Membership"),
    ("/contact.html", "Contact"),
)


@dataclass(frozen=True, slots=True)
class Site:
    """A website at one moment: path → page bytes, and what changed on each path.

    ``changes`` describes, for people reading the demo's report, what was done to each page
    since the previous state ("noise only", "one-sentence edit", "removed", …).
    """

    pages: dict[str, bytes]
    changes: dict[str, str]


def _token(*parts: object) -> str:
    """A stable pseudo-random token for one render (nonces and CSRF tokens look random)."""
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:24]


def render_page(path: str, title: str, body: str, render: int) -> bytes:
    """Render one page with the site's chrome and the noise of render number ``render``.

    Only the nonce, the CSRF token, the build comment and whitespace depend on ``render``.
    """
    nonce = _token("nonce", render, path)
    csrf = _token("csrf", render, path)
    build = _token("build", render)[:8]
    nav = "\n".join(f'<li><a href="{href}">{html.escape(text)}</a></li>' for href, text in _NAV)
    document = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)} | Riverside Cycling Club</title>
<link rel="stylesheet" href="/static/site.css?v={build}">
<!-- build {build}, rendered by render #{render} -->
<script nonce="{nonce}">window.__csrf = "{csrf}"; window.__build = "{build}";</script>
</head>
<body>
<header>
<a class="logo" href="/">Riverside Cycling Club</a>
<nav><ul>
{nav}
</ul></nav>
</header>
<main>
{body.strip()}
</main>
<footer>
<form action="/newsletter" method="post">
<input type="hidden" name="csrf_token" value="{csrf}">
<label>Get the monthly newsletter <input type="email" name="email"></label>
<button type="submit">Subscribe</button>
</form>
<!-- page cache key {_token("cache", render, path)} -->
<p>Riverside Cycling Club, The Boathouse, Mill Lane. Founded 1952.</p>
</footer>
</body>
</html>
"""
    indent = " " * (2 * (render % 3))
    lines = [indent + line if line else line for line in document.splitlines()]
    separator = "\n\n" if render % 2 == 0 else "\n"
    return (separator.join(lines) + "\n").encode("utf-8")


def _home_body(news: list[str]) -> str:
    return PAGES[HOME_PATH][1].replace("%NEWS%", "\n".join(news))


def first_site() -> Site:
    """The site as first crawled: nine pages, one of them a printable duplicate."""
    pages: dict[str, bytes] = {}
    for path, (title, body) in PAGES.items():
        if path == HOME_PATH:
            body = _home_body([NEWS_SPRING])
        pages[path] = render_page(path, title, body, render=1)
    title, body = PAGES[DUPLICATED_PATH]
    pages[DUPLICATE_PATH] = render_page(DUPLICATE_PATH, title, body, render=1)
    return Site(pages, {path: "first visit" for path in pages})


def changed_site() -> Site:
    """The site a week later: every page re-rendered, plus one change of each kind.

    - every page: new nonce, CSRF token, comments and whitespace ("noise only");
    - the maintenance guide: one sentence edited;
    - the rides page: rewritten for the winter programme;
    - a news item added and linked from the home page, whose old news item was removed
      (its URL now answers 404).
    """
    pages: dict[str, bytes] = {}
    changes: dict[str, str] = {}
    for path, (title, body) in PAGES.items():
        change = "noise only"
        if path == HOME_PATH:
            body = _home_body([NEWS_AUTUMN])
            change = "news link replaced"
        elif path == EDITED_PATH:
            if EDIT_OLD not in body:
                raise AssertionError("the demo's edited sentence is missing from its page")
            body = body.replace(EDIT_OLD, EDIT_NEW)
            change = "one-sentence edit"
        elif path == REWRITTEN_PATH:
            title, body = RIDES_REWRITTEN
            change = "rewritten"
        elif path == REMOVED_PATH:
            changes[path] = "removed"
            continue
        pages[path] = render_page(path, title, body, render=2)
        changes[path] = change
    title, body = PAGES[DUPLICATED_PATH]
    pages[DUPLICATE_PATH] = render_page(DUPLICATE_PATH, title, body, render=2)
    changes[DUPLICATE_PATH] = "noise only"
    path, title, body = NEWS_ADDED
    pages[path] = render_page(path, title, body, render=2)
    changes[path] = "added"
    return Site(pages, changes)


class DemoServer:
    """Serve a :class:`Site` on ``127.0.0.1`` at an ephemeral port, in a background thread.

    Use as a context manager; ``base_url`` is ``http://127.0.0.1:PORT``. ``site`` may be
    replaced while serving: the next request sees the new site.
    """

    def __init__(self, site: Site) -> None:
        self.site = site
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = server.site.pages.get(self.path.partition("?")[0])
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                """Silence the per-request log lines http.server writes to stderr."""

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="changewatch-demo-site", daemon=True
        )

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``, without a trailing slash."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> DemoServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
