"""Notifications of likes, comments, replies and mentions, against real PostgreSQL and
the in-process arq worker."""

from __future__ import annotations

import uuid

from sqlalchemy import text

from domain.db import new_id
from domain.notifications.consumers import notification_consumer
from domain.notifications.delivery import Delivery
from domain.outbox.events import LikeCreated
from schema.ids import decode_global_id
from tests.support.actions import post
from tests.support.checks import (
    events_of,
    no_unread_drift,
    notifications,
    redrive,
    run_handler_again,
    summary,
    unread,
)
from tests.support.documents import BLOCK, COMMENT, LIKE, MARK_READ


async def test_likes_within_ten_minutes_coalesce_into_one_notification(
    gql, make_users, worker, engine, settings
):
    author, *fans = await make_users(6)
    pid = await post(gql, author, "like me")
    for f in fans[:3]:
        assert (await gql(LIKE, {"id": pid}, token=f.token))["data"]["likePost"][
            "__typename"
        ] == "LikePostSuccess"
        await worker.drain()
    items = await notifications(gql, author)
    assert summary(items) == [("LIKE", fans[2].username, 3)]  # "fans[2] and 2 others"
    assert items[0]["post"] == {"caption": "like me"}
    events = await events_of(engine, "like.created", post_id=str(decode(pid)))
    await redrive(engine, worker, events)
    await run_handler_again(engine, settings, "like.created", events[0])
    assert summary(await notifications(gql, author)) == [("LIKE", fans[2].username, 3)]

    # Read, then one more like within the window: the same notification, unread again.
    assert (await gql(MARK_READ, {}, token=author.token))["data"]["markNotificationsRead"] == {
        "__typename": "MarkNotificationsReadSuccess",
        "unreadNotificationCount": 0,
    }
    await gql(LIKE, {"id": pid}, token=fans[3].token)
    await worker.drain()
    items = await notifications(gql, author)
    assert summary(items) == [("LIKE", fans[3].username, 4)] and items[0]["read"] is False
    assert await unread(gql, author) == 1

    # Eleven minutes later (the notification is moved back in time): a new one.
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE notifications SET created_at = created_at - interval '11 minutes'"
                " WHERE recipient_id = :r"
            ),
            {"r": author.id},
        )
    await gql(LIKE, {"id": pid}, token=fans[4].token)
    await worker.drain()
    assert summary(await notifications(gql, author)) == [
        ("LIKE", fans[4].username, 1),
        ("LIKE", fans[3].username, 4),
    ]
    assert await unread(gql, author) == 2
    await no_unread_drift(engine, author)


def decode(gid: str) -> uuid.UUID:
    return decode_global_id(gid, "Post", "id")


async def test_own_actions_notify_nobody(gql, make_users, worker):
    (author,) = await make_users(1)
    pid = await post(gql, author, f"me, myself: @{author.username}")
    await gql(LIKE, {"id": pid}, token=author.token)
    out = await gql(COMMENT, {"id": pid, "body": f"hi @{author.username}"}, token=author.token)
    cid = out["data"]["addComment"]["comment"]["id"]
    await gql(COMMENT, {"id": pid, "body": "and a reply", "parent": cid}, token=author.token)
    await worker.drain()
    assert await notifications(gql, author) == []
    assert await unread(gql, author) == 0


async def test_mentions_in_captions_reach_existing_users_once(gql, make_users, worker, engine):
    author, bob, carol, dave, stranger = await make_users(5)
    await gql(BLOCK, {"id": author.gid}, token=stranger.token)  # blocks the author
    caption = (
        f"with @{bob.username.upper()} and @{carol.username}, @{carol.username}."
        f" mail {dave.username}@example.com, https://x.example/@{dave.username},"
        f" @nosuchuser123 @{stranger.username}"
    )
    await post(gql, author, caption)
    await worker.drain()
    for user in (bob, carol):
        items = await notifications(gql, user)
        assert summary(items) == [("MENTION", author.username, 1)]
        assert items[0]["post"] == {"caption": caption}
    assert await notifications(gql, dave) == []  # not inside e-mails or URLs
    assert await notifications(gql, stranger) == []  # never across a block
    (event,) = await events_of(engine, "post.created", author_id=str(author.id))
    await redrive(engine, worker, [event])  # the feed fan-out and the mentions, again
    assert len(await notifications(gql, bob)) == 1


async def test_comments_replies_and_mentions_in_comments(gql, make_users, worker, engine):
    author, bob, carol, dave = await make_users(4)
    pid = await post(gql, author, "a post")
    out = await gql(COMMENT, {"id": pid, "body": f"nice @{dave.username}"}, token=bob.token)
    bob_comment = out["data"]["addComment"]["comment"]["id"]
    await gql(
        COMMENT,
        {"id": pid, "body": f"agreed @{author.username} @{bob.username}", "parent": bob_comment},
        token=carol.token,
    )
    await worker.drain()
    # The author: a COMMENT for each (carol's reply mentions them too: one notification).
    assert summary(await notifications(gql, author)) == [
        ("COMMENT", carol.username, 1),
        ("COMMENT", bob.username, 1),
    ]
    bob_items = await notifications(gql, bob)  # replied to and mentioned: one REPLY
    assert summary(bob_items) == [("REPLY", carol.username, 1)]
    assert bob_items[0]["comment"]["body"].startswith("agreed")
    dave_items = await notifications(gql, dave)
    assert summary(dave_items) == [("MENTION", bob.username, 1)]
    assert dave_items[0]["comment"] == {"body": f"nice @{dave.username}"}
    assert dave_items[0]["post"] == {"caption": "a post"}
    events = await events_of(engine, "comment.created", post_id=str(decode(pid)))
    await redrive(engine, worker, events)
    assert len(await notifications(gql, author)) == 2
    assert len(await notifications(gql, bob)) == 1


async def test_event_handled_before_a_block_and_a_gone_post_notify_nobody(
    make_users, engine, settings
):
    """Jobs re-read state: a like whose post was deleted, or across a block that came
    after the event, creates nothing (called directly with fresh event ids)."""
    author, fan = await make_users(2)
    post_id = new_id()
    async with engine.begin() as conn:
        await conn.execute(
            text("INSERT INTO posts (id, author_id, caption) VALUES (:p, :a, 'x')"),
            {"p": post_id, "a": author.id},
        )
        await conn.execute(
            text("INSERT INTO likes (post_id, user_id) VALUES (:p, :u)"),
            {"p": post_id, "u": fan.id},
        )
        await conn.execute(
            text("INSERT INTO blocks (blocker_id, blocked_id) VALUES (:a, :u)"),
            {"a": author.id, "u": fan.id},
        )
    consumer = notification_consumer(engine, settings.notification_config, Delivery(engine))
    like = LikeCreated(post_id, fan.id, author.id)
    await consumer[LikeCreated](like, new_id())
    async with engine.begin() as conn:
        await conn.execute(text("DELETE FROM blocks WHERE blocker_id = :a"), {"a": author.id})
        await conn.execute(
            text("UPDATE posts SET deleted_at = now() WHERE id = :p"), {"p": post_id}
        )
    await consumer[LikeCreated](like, new_id())
    async with engine.connect() as conn:
        n = await conn.scalar(
            text("SELECT count(*) FROM notifications WHERE recipient_id = :r"), {"r": author.id}
        )
    assert n == 0
