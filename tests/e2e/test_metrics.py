"""Honest metrics (app/metrics.py): the API exports only API series and the worker only
worker series; requests by operation and outcome, the DB pool, Redis errors and the
event loop's lag; /metrics on the API port only with a token; the worker's port."""

from __future__ import annotations

import asyncio
import time
import urllib.request
import uuid
from dataclasses import dataclass

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from redis.exceptions import ConnectionError as RedisConnectionError
from sqlalchemy import text

from app import metrics
from app.container import WorkerDeps
from app.metrics import API_REGISTRY, WORKER_REGISTRY, WorkerMetrics
from domain.outbox.events import Event
from domain.outbox.registry import Registry
from domain.outbox.unit_of_work import unit_of_work
from tests.support.servers import free_port
from workers.deps import DEPS
from workers.events import consume_outbox_event

API_ONLY = {
    "roost_graphql_request_duration_seconds",
    "roost_feed_timeline_reads",
    "roost_feed_rebuilds",
    "roost_feed_postgres_fallbacks",
    "roost_realtime_subscriptions",
    "roost_realtime_channels",
    "roost_realtime_dropped_events",
    "roost_rate_limited",
    "roost_http_guard_fail_open",
    "roost_http_guard_fail_closed",
    "roost_idempotent_replays",
    "roost_persisted_queries",
    "roost_unavailable",
}
WORKER_ONLY = {
    "roost_fanout_lag_seconds",
    "roost_fanout_feeds_written",
    "roost_dead_letters",
    "roost_outbox_backlog",
    "roost_dead_letters_open",
}
BOTH = {
    "roost_redis_errors",
    "roost_event_loop_lag_seconds",
    "roost_db_pool_connections",
    "roost_db_pool_size",
}


@pytest.fixture
async def make_client_with(settings, engine):
    """``make_client_with(**settings)``: a client of a fresh app with those settings."""
    import httpx

    from app.asgi import create_app

    clients: list[httpx.AsyncClient] = []

    def _make(**overrides) -> httpx.AsyncClient:
        app = create_app(settings.model_copy(update=overrides), engine=engine)
        client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://roost.test"
        )
        clients.append(client)
        return client

    yield _make
    for c in clients:
        await c.aclose()


def families(registry) -> dict[str, object]:
    return {
        f.name: f
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        if f.name.startswith("roost_")
    }


def sample(registry, name: str, **labels: str) -> float:
    """The value of one sample (0 when absent)."""
    for family in text_string_to_metric_families(generate_latest(registry).decode()):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return s.value
    return 0.0


def test_each_role_exports_only_its_own_series(app) -> None:
    api, worker = set(families(API_REGISTRY)), set(families(WORKER_REGISTRY))
    assert api == API_ONLY | BOTH, api ^ (API_ONLY | BOTH)
    assert worker == WORKER_ONLY | BOTH, worker ^ (WORKER_ONLY | BOTH)
    # Process metrics in both, as every exporter has them.
    assert "process_cpu_seconds_total" in generate_latest(WORKER_REGISTRY).decode()


async def test_requests_are_counted_by_operation_and_outcome(client, make_users) -> None:
    a, b = await make_users(2)
    name = f"Op{uuid.uuid4().hex[:8]}"
    count = "roost_graphql_request_duration_seconds_count"
    auth = {"Authorization": f"Bearer {a.token}"}

    await client.post(
        "/graphql", json={"query": f"query {name} {{ viewer {{ username }} }}"}, headers=auth
    )
    assert sample(API_REGISTRY, count, operation=name, outcome="ok") == 1

    # An error at a field (not a whole-request refusal): outcome "error".
    other = f'user(username: "{b.username}") {{ notifications(first: 1) {{ edges {{ cursor }} }} }}'
    await client.post(
        "/graphql",
        json={"query": f"query {name} {{ viewer {{ username }} {other} }}"},
        headers=auth,
    )
    assert sample(API_REGISTRY, count, operation=name, outcome="error") == 1

    # A bad token is refused as a whole (401), before the operation runs: "rejected".
    rejected = sample(API_REGISTRY, count, operation=name, outcome="rejected")
    await client.post(
        "/graphql",
        json={"query": f"query {name} {{ viewer {{ username }} }}"},
        headers={"Authorization": "Bearer not-a-token"},
    )
    assert sample(API_REGISTRY, count, operation=name, outcome="rejected") == rejected + 1

    # The name from operationName wins; a refused request counts too.
    before = sample(API_REGISTRY, count, operation="unknown", outcome="rejected")
    await client.post(
        "/graphql", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert sample(API_REGISTRY, count, operation="unknown", outcome="rejected") == before + 1
    anon_before = sample(API_REGISTRY, count, operation="anonymous", outcome="ok")
    await client.post("/graphql", json={"query": "{ __typename }"})
    assert sample(API_REGISTRY, count, operation="anonymous", outcome="ok") == anon_before + 1
    # Latency is recorded in the histogram's buckets.
    assert (
        sample(
            API_REGISTRY, "roost_graphql_request_duration_seconds_sum", operation=name, outcome="ok"
        )
        > 0
    )


def test_operation_labels_are_bounded(monkeypatch) -> None:
    monkeypatch.setattr(metrics, "_names", set())
    monkeypatch.setattr(metrics, "MAX_OPERATION_NAMES", 3)
    assert [metrics.operation_label(f"N{i}", None) for i in range(5)] == [
        "N0",
        "N1",
        "N2",
        "other",
        "other",
    ]
    assert metrics.operation_label("N1", None) == "N1"
    assert metrics.operation_label("not a name!", None) == "invalid"
    assert metrics.operation_label(None, "query Feed { viewer { id } }") in ("Feed", "other")
    assert metrics.operation_label(None, "{ viewer { id } }") == "anonymous"


async def test_metrics_on_the_api_port_need_the_token(client, make_client_with, settings) -> None:
    assert settings.metrics_token
    wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert (await client.get("/metrics")).status_code == 401
    ok = await client.get("/metrics", headers={"Authorization": f"Bearer {settings.metrics_token}"})
    assert ok.status_code == 200 and "roost_graphql_request_duration_seconds" in ok.text
    assert "roost_fanout_lag_seconds" not in ok.text
    # Without a token configured, /metrics is not there at all on the API port.
    tokenless = make_client_with(metrics_token=None)
    assert (await tokenless.get("/metrics")).status_code == 404


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as resp:
        return resp.read().decode()


async def test_the_worker_serves_its_series_on_its_port(engine) -> None:
    port = free_port()
    wm = WorkerMetrics(engine, "127.0.0.1", port)
    try:
        body = await asyncio.to_thread(_get, f"http://127.0.0.1:{port}/metrics")
    finally:
        await wm.close()
    assert "roost_fanout_lag_seconds" in body and "roost_outbox_backlog" in body
    assert "roost_graphql_request_duration_seconds" not in body
    assert 'roost_db_pool_connections{state="in_use"}' in body


async def test_redis_errors_pool_and_loop_lag_are_measured(engine) -> None:
    dead = metrics.redis_client("redis://127.0.0.1:1/0", client="test-dead")
    with pytest.raises(RedisConnectionError):
        await dead.ping()
    await dead.aclose()
    assert sample(API_REGISTRY, "roost_redis_errors_total", client="test-dead") >= 1

    metrics.POOLS.add(engine)
    try:
        async with engine.connect() as conn:
            await conn.execute(text("SELECT 1"))
            assert sample(API_REGISTRY, "roost_db_pool_connections", state="in_use") >= 1
    finally:
        metrics.POOLS.remove(engine)

    before = sample(API_REGISTRY, "roost_event_loop_lag_seconds_sum")
    watcher = asyncio.create_task(metrics.watch_loop_lag(every_s=0.01))
    await asyncio.sleep(0.05)
    time.sleep(0.2)  # noqa: ASYNC251 - block the loop, as a CPU-bound request would
    await asyncio.sleep(0.05)
    watcher.cancel()
    assert sample(API_REGISTRY, "roost_event_loop_lag_seconds_sum") - before >= 0.15


@dataclass(frozen=True)
class Broken(Event):
    """An event whose only consumer (in this test) always fails."""

    topic = "test.broken"
    aggregate = "user_id"
    user_id: uuid.UUID


async def test_a_dead_letter_is_counted_by_topic(engine, make_users) -> None:
    metrics.install()
    (a,) = await make_users(1)
    topic = Broken.topic
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        event = (await uow.record(Broken(a.id))).id
        await conn.execute(
            text("UPDATE outbox SET available_at = now() + interval '1 hour' WHERE id = :e"),
            {"e": event},
        )

    async def broken(event: Broken, event_id: uuid.UUID) -> None:
        raise ValueError("a bug")

    deps = WorkerDeps(
        engine,
        registry=Registry({Broken: ("broken",)}),
        consumers={"broken": {Broken: broken}},
        max_attempts=1,
    )
    ctx = {DEPS: deps, "job_try": 1}
    assert await consume_outbox_event(ctx, str(event), "broken") == "dead-letter"
    assert sample(WORKER_REGISTRY, "roost_dead_letters_total", topic=topic) == 1


def requests_of(operation: str) -> float:
    """Requests counted under ``operation``, every outcome."""
    families = text_string_to_metric_families(generate_latest(API_REGISTRY).decode())
    return sum(
        s.value
        for f in families
        for s in f.samples
        if s.name == "roost_graphql_request_duration_seconds_count"
        and s.labels.get("operation") == operation
    )


@pytest.mark.parametrize(
    ("query", "label"),
    [
        ("# Run this query with Ctrl-Enter\n{ __typename }", "anonymous"),
        ('{ a: __typename b: __type(name: "query Foo") { name } }', "anonymous"),
        ('"""mutation Bar"""\nquery Real { __typename }', "Real"),
        ("query One { __typename } query Two { __typename }", "ambiguous"),
        ("{ __typename ", "invalid"),
    ],
)
async def test_operation_label_is_the_parsed_operations_name(client, query, label) -> None:
    """The label comes from the parsed document: never a word of a comment or string."""
    names = (label, "with", "Foo", "Bar", "One")
    before = {name: requests_of(name) for name in names}
    await client.post("/graphql", json={"query": query})
    after = {name: requests_of(name) for name in names}
    assert after[label] == before[label] + 1, (before, after)
    assert all(after[n] == before[n] for n in names if n != label), (before, after)
