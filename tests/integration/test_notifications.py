"""Notifications against real PostgreSQL and the in-process arq worker.

Test settings (tests/conftest.py): NOTIFY_FOLLOW_DAILY_CAP=3.
"""

from __future__ import annotations

import asyncio

from sqlalchemy import text

from app.container import WorkerDeps
from domain.db import new_id
from domain.notifications.comments import notify_post_mentions
from domain.notifications.delivery import Delivery
from domain.notifications.store import EventRef
from tests.support.actions import make_private, post
from tests.support.checks import (
    events_of,
    no_unread_drift,
    notifications,
    redrive,
    run_handler_again,
    summary,
    unread,
)
from tests.support.documents import (
    APPROVE,
    BLOCK,
    COMMENT,
    FOLLOW,
    MARK_READ,
    NOTIFICATIONS_PAGE,
    UNFOLLOW,
)
from workers.deps import DEPS
from workers.notifications import follow_digest


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
    await no_unread_drift(engine, star, fan)


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
    await no_unread_drift(engine, star)


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


async def test_an_approved_request_notifies_the_requester_once(gql, make_users, worker, engine):
    fan, private = await make_users(2)
    await make_private(gql, private)
    await gql(FOLLOW, {"id": private.gid}, token=fan.token)
    out = await gql(APPROVE, {"id": fan.gid}, token=private.token)
    assert out["data"]["approveFollowRequest"]["__typename"] == "ApproveFollowRequestSuccess"
    await worker.drain()
    assert summary(await notifications(gql, fan)) == [
        ("FOLLOW_REQUEST_APPROVED", private.username, 1)
    ]
    (event,) = await events_of(engine, "follow_request.approved", requester_id=str(fan.id))
    await redrive(engine, worker, [event])  # its job again: still one notice
    assert len(await notifications(gql, fan)) == 1 and await unread(gql, fan) == 1
    # approving again, or an approval undone by a block before the job ran, tells nothing
    await gql(APPROVE, {"id": fan.gid}, token=private.token)
    assert len(await events_of(engine, "follow_request.approved", requester_id=str(fan.id))) == 1
    other = (await make_users(1))[0]
    await make_private(gql, other)
    await gql(FOLLOW, {"id": other.gid}, token=fan.token)
    await gql(APPROVE, {"id": fan.gid}, token=other.token)
    await gql(BLOCK, {"id": fan.gid}, token=other.token)
    await worker.drain()
    assert [n["actor"]["username"] for n in await notifications(gql, fan)] == [private.username]
    await no_unread_drift(engine, fan)


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
    await no_unread_drift(engine, me, other)


async def test_notification_pages_node_lookup_and_viewer_only_fields(
    gql, make_users, worker, engine
):
    me, *fans = await make_users(6)
    for f in fans:
        await gql(FOLLOW, {"id": me.gid}, token=f.token)
        await worker.drain()  # cap 3: three FOLLOW notifications
    seen, after = [], None
    while True:
        out = await gql(NOTIFICATIONS_PAGE, {"first": 2, "after": after}, token=me.token)
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
    from tests.support.checks import measured

    (me,) = await make_users(1)
    authors = await make_users(8)
    for a in authors:
        pid = await post(gql, a, f"hey @{me.username}")
        await gql(COMMENT, {"id": pid, "body": f"again @{me.username}"}, token=a.token)
    await worker.drain()
    costs = {}
    for first in (2, 16):
        data, statements = await measured(
            gql, engine, NOTIFICATIONS_PAGE, {"first": first}, token=me.token
        )
        assert len(data["viewer"]["notifications"]["edges"]) == first
        costs[first] = len(statements)
    assert costs[2] == costs[16], costs
    assert costs[16] <= 10, costs


async def test_caption_mention_jobs_racing_tell_each_person_once(gql, make_users, engine, settings):
    author, bob = await make_users(2)
    await post(gql, author, f"hey @{bob.username}")
    async with engine.connect() as conn:
        post_id = await conn.scalar(
            text("SELECT id FROM posts WHERE author_id = :a"), {"a": author.id}
        )
    config = settings.notification_config
    # the post.created job and post.edited jobs (each its own event), eight at once
    results = await asyncio.gather(
        *(notify_post_mentions(engine, config, EventRef.of(new_id()), post_id) for _ in range(8))
    )
    assert sum(len(c.created) for c in results) <= 1  # the worker's job may have been first
    mentions = [n for n in await notifications(gql, bob) if n["kind"] == "MENTION"]
    assert len(mentions) == 1
    await no_unread_drift(engine, bob)
