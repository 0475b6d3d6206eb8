"""The block walk (fingerprint/walk.py): what it reads does not depend on what the process
read before, and its fast paths cut the same blocks as the element-by-element walk."""

from __future__ import annotations

import subprocess
import sys

from changewatch.fingerprint import page_text


def test_links_inside_paragraphs_are_found_by_a_fresh_process() -> None:
    """The first page a process reads finds the links of its paragraphs (the walk once knew
    ``a`` only after meeting one outside a ``p``, so such links were missed)."""
    code = (
        "from changewatch.fingerprint import page_text\n"
        "html = '<p>See <a href=\"/terms\">the terms of service</a> today.</p>'\n"
        "print(page_text(html, url='https://example.com/').links)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "('https://example.com/terms',)"
    parts = page_text(
        "<p>See <a href='/terms'>the terms</a>.</p><p><area href='/map'>Map</p>",
        url="https://example.com/",
    )
    assert parts.links == ("https://example.com/map", "https://example.com/terms")
