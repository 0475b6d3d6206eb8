"""The commands about one page: ``check``, ``conditional``, ``history`` and ``diff``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import IO

import click

from changewatch.cli.common import (
    Options,
    console,
    decision_json,
    echo_json,
    fields_table,
    version_json,
    versions_table,
    warn_unusable_seen_set,
)
from changewatch.urls import canonicalise

__all__ = ["check", "conditional", "diff", "history"]


@click.command()
@click.argument("url")
@click.option(
    "--file",
    "-f",
    "body",
    type=click.File("rb"),
    help="The fetched page body; - reads standard input (none with --status 304).",
)
@click.option("--content-type", metavar="CT", help="The HTTP Content-Type (for its charset).")
@click.option(
    "--status",
    type=int,
    default=200,
    show_default=True,
    help="The HTTP status of the fetch: 2xx, or 304 (Not Modified, no body).",
)
@click.option(
    "--header",
    "-H",
    "header_lines",
    multiple=True,
    metavar="'NAME: VALUE'",
    help="A response header (repeatable): ETag and Last-Modified are kept for the next "
    "conditional GET; Content-Type gives the charset.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@click.pass_obj
def check(
    options: Options,
    url: str,
    body: IO[bytes] | None,
    content_type: str | None,
    status: int,
    header_lines: tuple[str, ...],
    as_json: bool,
) -> None:
    """Decide whether the page at URL, with the body in --file, needs parsing; record it."""
    headers = _parse_headers(header_lines)
    if body is None and status != 304:
        raise click.UsageError("--file is required (only a --status 304 answer has no body)")
    if content_type is None:
        content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), None)
    canonicalise(url, options.settings().canon_policy)  # a bad URL fails before any store opens
    html = None if body is None else body.read()
    with options.watch() as watch:
        decision = watch.should_parse(
            url, html, headers=headers, status=status, content_type=content_type
        )
        # check needs no seen-set, but one configured that cannot work is said, not ignored.
        warn_unusable_seen_set(watch, options.settings().seen_url, [])
    data = decision_json(decision)
    if as_json:
        echo_json(data)
    else:
        console().print(fields_table(data, "decision"))


def _parse_headers(lines: Sequence[str]) -> dict[str, str]:
    """``NAME: VALUE`` lines as a mapping (a later repeat wins); a malformed one is refused.

    >>> _parse_headers(['ETag: "v1"', "last-modified:Tue, 01 Dec 2026 10:00:00 GMT"])
    {'ETag': '"v1"', 'last-modified': 'Tue, 01 Dec 2026 10:00:00 GMT'}
    """
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        name = name.strip()
        if not colon or not name or any(c.isspace() for c in name):
            raise click.BadParameter(f"{line!r} is not 'NAME: VALUE'", param_hint="--header")
        headers[name] = value.strip()
    return headers


@click.command()
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON object instead.")
@click.pass_obj
def conditional(options: Options, url: str, as_json: bool) -> None:
    """Print the If-None-Match / If-Modified-Since headers for the next fetch of URL.

    One 'Name: value' line each (for curl -H), from the validators stored with its last
    fetch; nothing for a page never stored or stored without validators.
    """
    canonicalise(url, options.settings().canon_policy)
    with options.watch() as watch:
        headers = watch.conditional_headers(url)
    if as_json:
        echo_json(headers)
    else:
        for name, value in headers.items():
            click.echo(f"{name}: {value}")


@click.command()
@click.argument("url")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of a table.")
@click.pass_obj
def history(options: Options, url: str, as_json: bool) -> None:
    """List the stored versions of URL, oldest first.

    A URL never stored is not an error: exit status 0, an empty list with --json, and a
    line saying so otherwise.
    """
    canonical = canonicalise(url, options.settings().canon_policy)
    with options.watch() as watch:
        versions = watch.history(url)
    if as_json:
        echo_json([version_json(v) for v in versions])
    elif not versions:
        click.echo(f"no history for {canonical}: it was never stored")
    else:
        out = console()
        out.print(versions_table(versions, f"history of {canonical}", out.width))


@click.command()
@click.argument("url")
@click.option("--from", "from_version", type=click.IntRange(min=0), help="Older version (0: none).")
@click.option("--to", "to_version", type=click.IntRange(min=1), help="Newer version.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of the diff.")
@click.pass_obj
def diff(
    options: Options,
    url: str,
    from_version: int | None,
    to_version: int | None,
    as_json: bool,
) -> None:
    """Show what changed in the text of URL between two versions (default: previous → current).

    Needs the texts: they are kept only with CHANGEWATCH_STORE_TEXT=1 when a version is seen.
    """
    canonicalise(url, options.settings().canon_policy)  # a bad URL fails before any store opens
    with options.watch() as watch:
        result = watch.diff(url, from_version, to_version)
    if as_json:
        echo_json(
            {
                "url": result.url,
                "from_version": result.from_version,
                "to_version": result.to_version,
                "diff": result.lines,
            }
        )
    elif not result.lines:
        click.echo(
            f"versions {result.from_version} and {result.to_version} of {result.url} "
            "have the same text"
        )
    else:
        for line in result.lines:
            click.echo(line)
