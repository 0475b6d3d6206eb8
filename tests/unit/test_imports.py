"""The package surface: optional drivers stay unloaded, __all__ is sorted and complete."""

from __future__ import annotations

import json
import subprocess
import sys

import changewatch

_PROBE = """
import json, sys
import changewatch
loaded = sorted(
    name for name in sys.modules
    if name.split(".")[0] in {"redis", "scrapy", "httpx", "twisted"}
)
print(json.dumps({"loaded": loaded, "version": changewatch.__version__}))
"""


def test_import_does_not_load_optional_drivers() -> None:
    """`import changewatch` in a fresh interpreter loads no redis, scrapy or httpx module."""
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    report = json.loads(result.stdout)
    assert report["loaded"] == []
    assert report["version"] == changewatch.__version__


def test_installed_drivers_make_the_probe_meaningful() -> None:
    """redis and scrapy (the dev extras) are installed here, so the probe above can fail."""
    probe = (
        "import importlib.util, sys\n"
        "sys.exit(0 if all(importlib.util.find_spec(n) for n in ('redis', 'scrapy')) else 1)\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)


def test_all_sorted_unique_and_importable() -> None:
    """changewatch.__all__ is sorted, has no duplicates, and every name exists."""
    names = list(changewatch.__all__)
    assert names == sorted(names)
    assert len(names) == len(set(names))
    missing = [name for name in names if not hasattr(changewatch, name)]
    assert missing == []


def test_public_core_names_exported() -> None:
    """The core functions and the error root are part of the public surface."""
    for name in ("canonicalise", "url_digest", "fingerprint", "hamming", "ChangewatchError"):
        assert name in changewatch.__all__


_DUPEFILTER_PROBE = """
import json, sys
from scrapy import Request
from scrapy.utils.test import get_crawler
from changewatch.scrapy import ChangewatchDupeFilter
crawler = get_crawler(settings_dict={"CHANGEWATCH_SEEN_URL": "memory:"})
dupefilter = ChangewatchDupeFilter.from_crawler(crawler)
assert not dupefilter.request_seen(Request("https://example.com/a?utm_source=x"))
assert dupefilter.request_seen(Request("https://EXAMPLE.com/a"))
dupefilter.close("finished")
import changewatch
print(json.dumps({
    "sqlalchemy": any(name.split(".")[0] == "sqlalchemy" for name in sys.modules),
    "store": "changewatch.watch" in sys.modules,
}))
"""


def test_a_dupefilter_process_never_loads_the_store() -> None:
    """A Scrapy process that only filters requests does not load SQLAlchemy or the store
    (about 15 MiB and 0.2 s of start-up less in every crawl process)."""
    result = subprocess.run(
        [sys.executable, "-c", _DUPEFILTER_PROBE],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert json.loads(result.stdout.strip().splitlines()[-1]) == {
        "sqlalchemy": False,
        "store": False,
    }


def test_the_store_names_load_on_first_use() -> None:
    probe = (
        "import sys, changewatch\n"
        "assert 'changewatch.watch' not in sys.modules\n"
        "from changewatch import ChangeWatch, NearDuplicate, should_parse\n"
        "assert ChangeWatch.__module__ == 'changewatch.watch'\n"
        "assert changewatch.should_parse is should_parse\n"
        "assert callable(changewatch.fingerprint)  # the function, not the submodule\n"
        "try:\n"
        "    changewatch.no_such_name\n"
        "except AttributeError as exc:\n"
        "    assert 'no_such_name' in str(exc)\n"
        "else:\n"
        "    raise SystemExit('no AttributeError')\n"
        "assert set(changewatch.__all__) <= set(dir(changewatch))\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=60)
