"""``changewatch metrics serve``: a Prometheus ``/metrics`` endpoint for long-running jobs.

Registered on the main command group by :mod:`changewatch.cli`. Needs the ``metrics`` extra
(``prometheus_client``), imported only when the command runs.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import click

from changewatch.errors import ConfigError, SeenSetError

__all__ = ["metrics"]

log = logging.getLogger("changewatch")


@click.group()
def metrics() -> None:
    """Expose changewatch metrics to Prometheus."""


@metrics.command("serve")
@click.option("--port", type=click.IntRange(0, 65535), required=True, help="TCP port (0: any).")
@click.option("--addr", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--interval",
    type=click.FloatRange(min=0),
    default=15.0,
    show_default=True,
    metavar="S",
    help="Re-read store and seen-set figures at most every S seconds.",
)
@click.option(
    "--multiprocess",
    is_flag=True,
    help="Also sum the workers' metrics from PROMETHEUS_MULTIPROC_DIR.",
)
@click.pass_obj
def serve_command(options: Any, port: int, addr: str, interval: float, multiprocess: bool) -> None:
    """Serve /metrics from the store and seen-set figures until interrupted.

    The seen-set is opened read-and-share where it can be (Redis); a file seen-set held by a
    running crawler cannot be opened, and then only store figures are served.
    """
    try:
        from prometheus_client import CollectorRegistry

        from changewatch import metrics as cw_metrics
    except ModuleNotFoundError as exc:
        raise ConfigError(
            "metrics need the metrics extra: pip install 'changewatch-crawl[metrics]' "
            "(from a checkout: pip install -e '.[metrics]')"
        ) from exc
    watch = options.watch(allow_mixed_canon=True)
    lock = threading.Lock()

    def stats() -> dict[str, Any]:
        with lock:
            try:
                watch.seen  # noqa: B018 — open the seen-set so stats() includes it
            except SeenSetError as exc:
                log.warning("metrics: seen-set not readable (%s); serving store figures", exc)
            figures: dict[str, Any] = watch.stats()
            return figures

    registry = cw_metrics.multiprocess_registry() if multiprocess else CollectorRegistry()
    collector = cw_metrics.StatsCollector(stats, interval=interval)
    collector.read()  # fail now, with a clear error, if the store cannot be read
    registry.register(collector)
    server, bound = cw_metrics.serve(registry, port, addr)
    click.echo(f"serving metrics on http://{addr}:{bound}/metrics", err=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()
        server.server_close()
        watch.close()
