"""Reads of database and Redis state that tests assert on (counts, drift, queues)."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.feedstore import FeedRedis
from adapters.feedstore.stores import feed_stores
from domain.counters.verify import verify_counts
from domain.feed.config import FeedStores
from domain.feed.expected import expected_feed
from domain.notifications.consumers import notification_consumer
from domain.notifications.delivery import Delivery
from domain.notifications.queries import verify_unread_counts
from domain.outbox.events import decode
from domain.social.verify_counts import verify_follow_counts
from tests.support.documents import NOTIFICATIONS_PAGE


async def no_follow_count_drift(engine) -> None:
    report = await verify_follow_counts(engine)
    assert report.drift == [], report.drift[:5]


async def pending_requests(engine, target) -> list[uuid.UUID]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT requester_id FROM follow_requests WHERE target_id = :t"), {"t": target.id}
        )
        return [r[0] for r in rows]


async def live_rows(engine, followee_id) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT count(*) FROM follows WHERE followee_id = :f AND deleted_at IS NULL"),
            {"f": followee_id},
        )


async def in_cached_feed(stores: FeedStores, user, post_gid: str) -> bool | None:
    """True/False whether the post is in the user's Redis feed; None if no feed key."""
    from schema.ids import decode_global_id

    pid = decode_global_id(post_gid, "Post", "id")
    key = stores.feeds.key(user.id)
    if not await stores.feeds.redis.exists(key):
        return None
    return await stores.feeds.redis.zscore(key, pid.bytes) is not None


def stores_for(settings) -> tuple[FeedRedis, FeedStores]:
    """A feed store client of the settings' backend (one Redis or the cluster)."""
    redis = settings.open_feed_redis()
    return redis, feed_stores(redis, settings.feed_config)


async def no_count_drift(engine, *ids: uuid.UUID) -> None:
    """No counter of these entities (every kind `roost counts verify` checks) drifts."""
    report = await verify_counts(engine)
    wanted = set(ids)
    assert [d for d in report.drift if d.entity_id in wanted] == []


async def no_unread_drift(engine, *users) -> None:
    ids = {u.id for u in users}
    assert [d for d in await verify_unread_counts(engine) if d.user_id in ids] == []


async def run_handler_again(engine, settings, topic: str, event_id: uuid.UUID) -> None:
    """Call the notification consumer of one event directly (a second run of its job)."""
    async with engine.connect() as conn:
        payload = await conn.scalar(
            text("SELECT payload FROM outbox WHERE id = :id"), {"id": event_id}
        )
    consumer = notification_consumer(engine, settings.notification_config, Delivery(engine))
    event = decode(topic, payload)
    await consumer[type(event)](event, event_id)


async def redrive(engine, worker, event_ids: list[uuid.UUID]) -> None:
    """Run the jobs of these events again, as after a crash before they were marked
    dispatched: the relay re-enqueues them and the worker consumes them once more."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE outbox SET dispatched_at = NULL, available_at = now()"
                " WHERE id = ANY(CAST(:ids AS uuid[]))"
            ),
            {"ids": event_ids},
        )
    await worker.drain()


async def events_of(engine, topic: str, **payload: str) -> list[uuid.UUID]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                "SELECT id FROM outbox WHERE topic = :t AND payload @> CAST(:p AS jsonb)"
                " ORDER BY id"
            ),
            {"t": topic, "p": json.dumps(payload)},
        )
        return [r[0] for r in rows]


def summary(items: list[dict]) -> list[tuple]:
    """(kind, actor username, count) of each notification, newest first."""
    return [(n["kind"], (n["actor"] or {}).get("username"), n["count"]) for n in items]


async def unread(gql, user) -> int:
    out = await gql(NOTIFICATIONS_PAGE, {"first": 0}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]["unreadNotificationCount"]


async def notifications(gql, user, first: int = 50) -> list[dict]:
    out = await gql(NOTIFICATIONS_PAGE, {"first": first}, token=user.token)
    assert "errors" not in out, out
    return [e["node"] for e in out["data"]["viewer"]["notifications"]["edges"]]


async def measured(gql, engine: AsyncEngine, query: str, variables: dict, token: str):
    """Run ``query`` once to warm the pool, then again while counting statements; return
    (response data, statements)."""
    warm = await gql(query, variables, token=token)
    assert "errors" not in warm, warm
    with recorded_statements(engine) as statements:
        out = await gql(query, variables, token=token)
    assert "errors" not in out, out
    return out["data"], list(statements)


@contextlib.contextmanager
def recorded_statements(engine: AsyncEngine) -> Iterator[list[str]]:
    """Collect the SQL of every statement ``engine`` executes inside the ``with`` block."""
    statements: list[str] = []

    def _record(conn, cursor, statement, parameters, context, executemany) -> None:
        statements.append(" ".join(statement.split()))

    event.listen(engine.sync_engine, "before_cursor_execute", _record)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", _record)


async def walked_feed(gql, token: str, first: int) -> list[uuid.UUID]:
    """The post ids of a user's whole home feed, walked through the API ``first`` at a
    time (every page asserted free of errors)."""
    from schema.ids import decode_global_id
    from tests.support.documents import FEED

    seen: list[uuid.UUID] = []
    after = None
    while True:
        out = await gql(FEED, {"first": first, "after": after}, token=token)
        assert "errors" not in out, out
        feed = out["data"]["viewer"]["feed"]
        seen += [decode_global_id(e["node"]["id"], "Post", "id") for e in feed["edges"]]
        if not feed["pageInfo"]["hasNextPage"]:
            return seen
        after = feed["pageInfo"]["endCursor"]


async def feed_audit(
    gql, engine: AsyncEngine, users: list[tuple[uuid.UUID, str]], *, firsts=(7, 50)
) -> dict[tuple[uuid.UUID, int], tuple[int, int, int]]:
    """Walk every user's feed through the API at each page size of ``firsts`` and
    compare it with the set computed in SQL. Returns ``{(user, first): (missing,
    unexpected, repeated)}`` for the walks that differ (empty: every feed is right)."""
    wrong: dict[tuple[uuid.UUID, int], tuple[int, int, int]] = {}
    for user_id, token in users:
        async with engine.connect() as conn:
            expected = await expected_feed(conn, user_id)
        for first in firsts:
            walk = await walked_feed(gql, token, first)
            got = set(walk)
            counts = (len(expected - got), len(got - expected), len(walk) - len(got))
            if counts != (0, 0, 0):
                wrong[(user_id, first)] = counts
    return wrong


@contextlib.contextmanager
def sql_log(engine) -> Iterator[dict[str, list]]:
    """Statements and transactions (BEGIN) the engine runs inside the block."""
    seen: dict[str, list] = {"statements": [], "begins": []}

    def statement(conn, cursor, sql, *args) -> None:
        seen["statements"].append(" ".join(sql.split())[:90])

    def begin(conn) -> None:
        seen["begins"].append(conn)

    event.listen(engine.sync_engine, "before_cursor_execute", statement)
    event.listen(engine.sync_engine, "begin", begin)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", statement)
        event.remove(engine.sync_engine, "begin", begin)
