"""Prometheus metrics, one registry per process role (:data:`API_REGISTRY`,
:data:`WORKER_REGISTRY`; docs/operations/metrics.md lists every series), and
:class:`PrometheusMetrics`, the domain's metrics port."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from typing import Any
from urllib.parse import urlsplit

from graphql import GraphQLError, OperationDefinitionNode
from prometheus_client import (
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    REGISTRY,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    disable_created_metrics,
    start_http_server,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, SSLConnection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine

from app.parsing import parse_document
from domain import metrics as domain_metrics
from domain.outbox.process import outbox_health

log = logging.getLogger("roost.metrics")

# No `<name>_created` series: twice the series for a timestamp nobody graphs.
disable_created_metrics()

#: The API's series (prometheus_client's default registry).
API_REGISTRY: CollectorRegistry = REGISTRY
WORKER_REGISTRY = CollectorRegistry(auto_describe=True)
for _collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
    WORKER_REGISTRY.register(_collector)

_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)


def _both(metric: Any) -> Any:
    """Register ``metric`` (built with ``registry=None``) in both registries."""
    API_REGISTRY.register(metric)
    WORKER_REGISTRY.register(metric)
    return metric


# --- API series ---------------------------------------------------------------------------

GRAPHQL_REQUESTS = Histogram(
    "roost_graphql_request_duration_seconds",
    "GraphQL requests over HTTP by operation name and outcome, seconds from the first "
    "byte in to the last byte out (``_count`` is the request count).",
    ["operation", "outcome"],
    buckets=_LATENCY_BUCKETS,
)
FEED_TIMELINE_READS = Counter(
    "roost_feed_timeline_reads_total",
    "Timelines a feed read asked Redis for: hit (cached) or miss (rebuilt from PostgreSQL).",
    ["result"],
)
FEED_REBUILDS = Counter(
    "roost_feed_rebuilds_total",
    "Timelines rebuilt from PostgreSQL because their key was missing.",
    ["family"],
)
FEED_FALLBACKS = Counter(
    "roost_feed_postgres_fallbacks_total",
    "Home-feed pages served from PostgreSQL because Redis failed.",
)
REALTIME_DROPPED = Counter(
    "roost_realtime_dropped_events_total",
    "Events dropped because a subscriber's queue was full (a slow client).",
)
UNAVAILABLE = Counter(
    "roost_unavailable_total",
    "Requests answered SERVICE_UNAVAILABLE (503) because a dependency was down.",
    ["dependency"],
)

# --- worker series ------------------------------------------------------------------------

FANOUT_LAG = Histogram(
    "roost_fanout_lag_seconds",
    "Seconds from a post's commit to the last follower page written.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
    registry=WORKER_REGISTRY,
)
FANOUT_FEEDS = Counter(
    "roost_fanout_feeds_written_total",
    "Follower feeds written by fan-out.",
    registry=WORKER_REGISTRY,
)
DEAD_LETTERS = Counter(
    "roost_dead_letters_total",
    "Outbox events whose consumer failed every attempt (now dead letters).",
    ["topic"],
    registry=WORKER_REGISTRY,
)
OUTBOX_BACKLOG = Gauge(
    "roost_outbox_backlog",
    "Outbox events not yet dispatched (read from PostgreSQL every few seconds).",
    registry=WORKER_REGISTRY,
)
DEAD_LETTERS_OPEN = Gauge(
    "roost_dead_letters_open",
    "Dead letters not yet replayed (read from PostgreSQL every few seconds).",
    registry=WORKER_REGISTRY,
)

# --- series of both -----------------------------------------------------------------------

REDIS_ERRORS = _both(
    Counter(
        "roost_redis_errors_total",
        "Redis commands or connections that failed (connection refused or lost, timeout).",
        ["client", "error"],
        registry=None,
    )
)
LOOP_LAG = _both(
    Histogram(
        "roost_event_loop_lag_seconds",
        "How late the event loop ran a timer (sampled every 0.5 s): time it spent "
        "blocked by CPU work or a synchronous call.",
        buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5),
        registry=None,
    )
)


class PrometheusMetrics:
    """The domain's :class:`~domain.metrics.Metrics` port, recorded in the families above."""

    def __init__(self) -> None:
        self._hit = FEED_TIMELINE_READS.labels("hit")
        self._miss = FEED_TIMELINE_READS.labels("miss")

    def feed_timelines_read(self, hits: int, misses: int) -> None:
        if hits:
            self._hit.inc(hits)
        if misses:
            self._miss.inc(misses)

    def feed_rebuilt(self, family: str) -> None:
        FEED_REBUILDS.labels(family).inc()

    def feed_fallback(self) -> None:
        FEED_FALLBACKS.inc()

    def fanout_done(self, lag_seconds: float, feeds_written: int) -> None:
        FANOUT_LAG.observe(lag_seconds)
        FANOUT_FEEDS.inc(feeds_written)

    def realtime_dropped(self) -> None:
        REALTIME_DROPPED.inc()

    def dead_lettered(self, topic: str) -> None:
        DEAD_LETTERS.labels(topic).inc()


def install() -> None:
    """Route the domain's reports of this process to Prometheus (idempotent)."""
    if not isinstance(domain_metrics.current(), PrometheusMetrics):
        domain_metrics.install(PrometheusMetrics())


def serve(registry: CollectorRegistry, host: str, port: int) -> Callable[[], None] | None:
    """Serve ``registry`` over HTTP on ``host:port`` from a thread (prometheus_client);
    return a function that stops it, or None (``port`` 0, or the port is taken: logged)."""
    if not port:
        return None
    try:
        server, thread = start_http_server(port, addr=host, registry=registry)
    except OSError as exc:
        log.warning("metrics port %s:%s: %s; metrics are not served there", host, port, exc)
        return None
    log.info("metrics at http://%s:%s/metrics", host, port)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return stop


class PoolCollector(Collector):
    """The ``roost_db_pool_*`` gauges of the pools added, read at scrape time."""

    def __init__(self) -> None:
        self._engines: list[AsyncEngine] = []
        self._lock = threading.Lock()

    def add(self, engine: AsyncEngine) -> None:
        with self._lock:
            if engine not in self._engines:
                self._engines.append(engine)

    def remove(self, engine: AsyncEngine) -> None:
        with self._lock:
            if engine in self._engines:
                self._engines.remove(engine)

    def collect(self) -> Iterable[GaugeMetricFamily]:
        conns = GaugeMetricFamily(
            "roost_db_pool_connections",
            "PostgreSQL connections of this process's pool: in_use (checked out) or idle.",
            labels=["state"],
        )
        size = GaugeMetricFamily(
            "roost_db_pool_size", "Most connections this process's pool may open."
        )
        in_use = idle = limit = 0
        with self._lock:
            engines = list(self._engines)
        for engine in engines:
            pool: Any = engine.pool
            with contextlib.suppress(AttributeError):  # NullPool has no counters
                in_use += pool.checkedout()
                idle += pool.checkedin()
                limit += pool.size() + max(0, pool._max_overflow)
        conns.add_metric(["in_use"], in_use)
        conns.add_metric(["idle"], idle)
        size.add_metric([], limit)
        yield conns
        yield size

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


POOLS = _both(PoolCollector())


class _GaugeCallback(Collector):
    """A gauge whose value a callback returns at scrape time (0 without one)."""

    def __init__(self, name: str, documentation: str) -> None:
        self.name, self.documentation = name, documentation
        self.read: Callable[[], float] | None = None

    def collect(self) -> Iterable[GaugeMetricFamily]:
        value = 0.0
        if self.read is not None:
            with contextlib.suppress(Exception):
                value = float(self.read())
        yield GaugeMetricFamily(self.name, self.documentation, value=value)

    def describe(self) -> Iterable[GaugeMetricFamily]:
        return []


REALTIME_SUBSCRIPTIONS = _GaugeCallback(
    "roost_realtime_subscriptions", "Open GraphQL subscriptions of this process."
)
REALTIME_CHANNELS = _GaugeCallback(
    "roost_realtime_channels", "Redis pub/sub channels this process subscribes."
)
API_REGISTRY.register(REALTIME_SUBSCRIPTIONS)
API_REGISTRY.register(REALTIME_CHANNELS)


_COUNTED = (RedisConnectionError, RedisTimeoutError, OSError)


def _counting(base: type, client: str) -> type:
    class Counting(base):
        roost_client = client

        async def connect(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().connect(*args, **kwargs)
            except _COUNTED as exc:
                REDIS_ERRORS.labels(self.roost_client, type(exc).__name__).inc()
                raise

        async def send_packed_command(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().send_packed_command(*args, **kwargs)
            except _COUNTED as exc:
                REDIS_ERRORS.labels(self.roost_client, type(exc).__name__).inc()
                raise

        async def read_response(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().read_response(*args, **kwargs)
            except _COUNTED as exc:
                REDIS_ERRORS.labels(self.roost_client, type(exc).__name__).inc()
                raise

    Counting.__name__ = f"Counting{base.__name__}"
    return Counting


@cache
def _connection_class(scheme: str, client: str) -> type:
    base = {"rediss": SSLConnection, "unix": UnixDomainSocketConnection}.get(scheme, Connection)
    return _counting(base, client)


def redis_client(url: str, *, client: str, **kwargs: Any) -> Redis:
    """``Redis.from_url(url, **kwargs)`` whose failures count in
    ``roost_redis_errors_total{client, error}`` (``client``: ``api`` or ``worker``)."""
    scheme = urlsplit(url).scheme
    return Redis.from_url(url, connection_class=_connection_class(scheme, client), **kwargs)


LOOP_LAG_EVERY_S = 0.5


async def watch_loop_lag(every_s: float = LOOP_LAG_EVERY_S) -> None:
    """Until cancelled: observe how late each ``every_s`` sleep wakes (``LOOP_LAG``)."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(every_s)
        LOOP_LAG.observe(max(0.0, loop.time() - start - every_s))


#: Distinct operation names a process labels; later ones count as ``other`` (clients
#: choose the names: an unbounded label would grow Prometheus's memory without end).
MAX_OPERATION_NAMES = 200

_NAME = re.compile(r"[_A-Za-z][_0-9A-Za-z]{0,63}")
_names: set[str] = set()


@lru_cache(maxsize=1024)
def _document_name(query: str, max_tokens: int) -> str:
    """The name of the document's one operation, from its (cached) parse: ``anonymous``
    (none), ``ambiguous`` (several operations), ``invalid`` (no parse)."""
    try:
        document = parse_document(query, max_tokens)
    except GraphQLError:
        return "invalid"
    ops = [d for d in document.definitions if isinstance(d, OperationDefinitionNode)]
    if len(ops) != 1:
        return "ambiguous" if ops else "invalid"
    return ops[0].name.value if ops[0].name is not None else "anonymous"


def operation_label(operation_name: str | None, query: str | None, max_tokens: int = 4000) -> str:
    """The ``operation`` label: ``operationName`` or the only operation's name
    (``anonymous``, ``invalid``, or ``other`` past MAX_OPERATION_NAMES names)."""
    if operation_name is None:
        if not query:
            return "unknown"
        name = _document_name(query, max_tokens)
        if name in ("anonymous", "ambiguous", "invalid"):
            return name
    else:
        name = operation_name
    if name in _names:
        return name
    if not _NAME.fullmatch(name):
        return "invalid"
    if len(_names) >= MAX_OPERATION_NAMES:
        return "other"
    _names.add(name)
    return name


_children: dict[tuple[str, str], Any] = {}


def observe_request(operation: str, outcome: str, seconds: float) -> None:
    """Count one GraphQL request and its latency (children cached: no label lookup)."""
    child = _children.get((operation, outcome))
    if child is None:
        child = _children[(operation, outcome)] = GRAPHQL_REQUESTS.labels(operation, outcome)
    child.observe(seconds)


#: Seconds between two reads of the outbox backlog and open dead letters.
OUTBOX_REFRESH_S = 5.0


class WorkerMetrics:
    """A worker's metrics: the domain adapter, its pool, loop lag, the outbox gauges and
    the HTTP server on ``METRICS_HOST:WORKER_METRICS_PORT``."""

    def __init__(self, engine: AsyncEngine, host: str, port: int) -> None:
        install()
        self.engine = engine
        POOLS.add(engine)
        self._stop_server = serve(WORKER_REGISTRY, host, port)
        self._tasks = [
            asyncio.create_task(watch_loop_lag(), name="loop-lag"),
            asyncio.create_task(self._refresh_outbox(), name="outbox-gauges"),
        ]

    async def _refresh_outbox(self) -> None:
        while True:
            try:
                backlog, dead = await outbox_health(self.engine)
                OUTBOX_BACKLOG.set(backlog)
                DEAD_LETTERS_OPEN.set(dead)
            except asyncio.CancelledError:
                raise
            except Exception:  # PostgreSQL down: the gauges keep their last values
                pass
            await asyncio.sleep(OUTBOX_REFRESH_S)

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._stop_server is not None:
            await asyncio.to_thread(self._stop_server)
        POOLS.remove(self.engine)
