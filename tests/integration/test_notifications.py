"""Notifications against real PostgreSQL and the in-process arq worker (issue item 5).

Test settings (tests/conftest.py): NOTIFY_FOLLOW_DAILY_CAP=3.
"""

from __future__ import annotations

import json
import uuid

from sqlalchemy import text

from app.container import WorkerDeps
from domain.notifications.consumers import notification_consumer
from domain.notifications.delivery import Delivery
from domain.notifications.queries import verify_unread_counts
from domain.notifications.store import EventRef
from domain.outbox.events import decode
from tests.e2e.test_engagement import COMMENT
from tests.e2e.test_follow_graph import FOLLOW, UNFOLLOW
from tests.integration.test_feed import post
from workers.deps import DEPS
from workers.notifications import follow_digest

NOTIFICATIONS = """query($first: Int!, $after: String) { viewer { unreadNotificationCount
  notifications(first: $first, after: $after) {
    edges { cursor node { id kind count read createdAt actor { username }
      post { caption } comment { body } } }
    pageInfo { hasNextPage endCursor } } } }"""
MARK_READ = """mutation($ids: [ID!]) { markNotificationsRead(input: { ids: $ids }) { __typename
  ... on MarkNotificationsReadSuccess { unreadNotificationCount }
  ... on Error { code message } ... on ValidationError { field } } }"""


async def notifications(gql, user, first: int = 50) -> list[dict]:
    out = await gql(NOTIFICATIONS, {"first": first}, token=user.token)
    assert "errors" not in out, out
    return [e["node"] for e in out["data"]["viewer"]["notifications"]["edges"]]


async def unread(gql, user) -> int:
    out = await gql(NOTIFICATIONS, {"first": 0}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]["unreadNotificationCount"]


def summary(items: list[dict]) -> list[tuple]:
    """(kind, actor username, count) of each notification, newest first."""
    return [(n["kind"], (n["actor"] or {}).get("username"), n["count"]) for n in items]


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


async def run_handler_again(engine, settings, topic: str, event_id: uuid.UUID) -> None:
    """Call the notification consumer of one event directly (a second run of its job)."""
    async with engine.connect() as conn:
        payload = await conn.scalar(
            text("SELECT payload FROM outbox WHERE id = :id"), {"id": event_id}
        )
    consumer = notification_consumer(engine, settings.notification_config, Delivery(engine))
    event = decode(topic, payload)
    await consumer[type(event)](event, event_id)


async def no_drift(engine, *users) -> None:
    ids = {u.id for u in users}
    assert [d for d in await verify_unread_counts(engine) if d.user_id in ids] == []


async def test_follow_notifies_once_even_when_its_job_runs_twice(
    gql, make_users, worker, engine, settings
):
    fan, star = await make_users(2)
    await gql(FOLLOW, {"id": star.gid}, token=fan.token)
    await worker.drain()
    assert summary(await notifications(gql, star)) == [("FOLLOW", fan.username, 1)]
    (event,) = await events_of(engine, "follow.created", followee_id=str(star.id))
    await redrive(engine, worker, [event])
    await run_handler_again(engine, settings, "follow.created", event)
    items = await notifications(gql, star)
    assert summary(items) == [("FOLLOW", fan.username, 1)]
    assert items[0]["read"] is False and items[0]["post"] is None
    assert await unread(gql, star) == 1
    assert await notifications(gql, fan) == []  # the follower is told nothing
    await no_drift(engine, star, fan)


async def test_unfollow_never_notifies_and_a_refollow_the_same_day_is_not_news(
    gql, make_users, worker, engine
):
    fan, star = await make_users(2)
    await gql(FOLLOW, {"id": star.gid}, token=fan.token)
    await worker.drain()
    await gql(UNFOLLOW, {"id": star.gid}, token=fan.token)
    await worker.drain()
    assert summary(await notifications(gql, star)) == [("FOLLOW", fan.username, 1)]
    await gql(FOLLOW, {"id": star.gid}, token=fan.token)  # follow/unfollow/follow spam
    await worker.drain()
    assert summary(await notifications(gql, star)) == [("FOLLOW", fan.username, 1)]
    async with engine.connect() as conn:
        outcomes = (
            await conn.execute(
                text(
                    "SELECT outcome FROM notification_sources WHERE recipient_id = :r"
                    " ORDER BY source_event_id"
                ),
                {"r": star.id},
            )
        ).all()
    assert [o[0] for o in outcomes] == ["notified", "repeat"]


async def test_follows_past_the_daily_cap_arrive_as_one_digest(
    gql, make_users, worker, engine, settings
):
    (star,) = await make_users(1)
    fans = await make_users(7)  # cap 3: 3 notifications, then 4 in the digest
    for f in fans:  # in turn: the cap goes to the first three
        await gql(FOLLOW, {"id": star.gid}, token=f.token)
        await worker.drain()
    items = await notifications(gql, star)
    assert summary(items) == [("FOLLOW", f.username, 1) for f in reversed(fans[:3])]
    events = await events_of(engine, "follow.created", followee_id=str(star.id))
    await redrive(engine, worker, events)  # every job runs again: nothing changes
    assert len(await notifications(gql, star)) == 3

    day = EventRef.of(events[0]).day
    ctx = {DEPS: WorkerDeps(engine, settings=settings, delivery=Delivery(engine))}
    assert await follow_digest(ctx, day.isoformat()) >= 1
    assert await follow_digest(ctx, day.isoformat()) == 0  # a second run creates nothing
    items = await notifications(gql, star)
    assert summary(items)[0] == ("FOLLOW_DIGEST", None, 4)
    assert len(items) == 4 and await unread(gql, star) == 4
    for f in fans:  # no follower was notified of anything
        assert await notifications(gql, f) == []
    await no_drift(engine, star)


async def test_follow_request_notifies_the_private_account(gql, make_users, worker, engine):
    fan, private = await make_users(2)
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET is_private = true WHERE id = :id"), {"id": private.id}
        )
    await gql(FOLLOW, {"id": private.gid}, token=fan.token)
    await worker.drain()
    assert summary(await notifications(gql, private)) == [("FOLLOW_REQUEST", fan.username, 1)]
    (event,) = await events_of(engine, "follow_request.created", target_id=str(private.id))
    await redrive(engine, worker, [event])
    assert len(await notifications(gql, private)) == 1


async def test_mark_read_by_id_and_all_keeps_the_unread_count_exact(
    gql, make_users, worker, engine
):
    me, *fans = await make_users(4)
    (other,) = await make_users(1)
    for f in fans:
        await gql(FOLLOW, {"id": me.gid}, token=f.token)
    await gql(FOLLOW, {"id": other.gid}, token=fans[0].token)
    await worker.drain()
    items = await notifications(gql, me)
    assert len(items) == 3 and await unread(gql, me) == 3
    theirs = (await notifications(gql, other))[0]["id"]

    out = await gql(MARK_READ, {"ids": [items[0]["id"], theirs]}, token=me.token)
    assert out["data"]["markNotificationsRead"]["unreadNotificationCount"] == 2
    assert [n["read"] for n in await notifications(gql, me)] == [True, False, False]
    assert await unread(gql, other) == 1  # another user's id is ignored
    out = await gql(MARK_READ, {"ids": [items[0]["id"]]}, token=me.token)  # again: no-op
    assert out["data"]["markNotificationsRead"]["unreadNotificationCount"] == 2
    out = await gql(MARK_READ, {"ids": ["not-an-id"]}, token=me.token)
    assert out["data"]["markNotificationsRead"]["__typename"] == "ValidationError"
    out = await gql(MARK_READ, {"ids": []}, token=me.token)  # empty: all
    assert out["data"]["markNotificationsRead"]["unreadNotificationCount"] == 0
    assert all(n["read"] for n in await notifications(gql, me))
    await no_drift(engine, me, other)


async def test_notification_pages_node_lookup_and_viewer_only_fields(
    gql, make_users, worker, engine
):
    me, *fans = await make_users(6)
    for f in fans:
        await gql(FOLLOW, {"id": me.gid}, token=f.token)
        await worker.drain()  # cap 3: three FOLLOW notifications
    seen, after = [], None
    while True:
        out = await gql(NOTIFICATIONS, {"first": 2, "after": after}, token=me.token)
        page = out["data"]["viewer"]["notifications"]
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == 3
    node = """query($id: ID!) { node(id: $id) { ... on Notification { kind } } }"""
    mine = await gql(node, {"id": seen[0]}, token=me.token)
    assert mine["data"]["node"] == {"kind": "FOLLOW"}
    assert (await gql(node, {"id": seen[0]}, token=fans[0].token))["data"]["node"] is None
    other = await gql(
        """query($u: String!) { user(username: $u) { unreadNotificationCount } }""",
        {"u": me.username},
        token=fans[0].token,
    )
    assert other["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    anon = await gql(MARK_READ, {})
    assert anon["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_page_of_notifications_costs_constant_sql(gql, make_users, worker, engine):
    from tests.integration.test_query_count import measured

    (me,) = await make_users(1)
    authors = await make_users(8)
    for a in authors:
        pid = await post(gql, a, f"hey @{me.username}")
        await gql(COMMENT, {"id": pid, "body": f"again @{me.username}"}, token=a.token)
    await worker.drain()
    costs = {}
    for first in (2, 16):
        data, statements = await measured(
            gql, engine, NOTIFICATIONS, {"first": first}, token=me.token
        )
        assert len(data["viewer"]["notifications"]["edges"]) == first
        costs[first] = len(statements)
    assert costs[2] == costs[16], costs
    assert costs[16] <= 10, costs
