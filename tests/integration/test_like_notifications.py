"""A like notification counts distinct people (domain.notifications.likes): a repeat
like adds nobody, an unlike takes its liker back out, in whatever order the jobs of the
like and unlike events run. The consumers are called directly here, each with its own
event, so the order is the test's."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from domain.counters import Delta, add_deltas
from domain.db import new_id
from domain.notifications.delivery import Delivery
from domain.notifications.likes import notify_like, withdraw_like
from domain.notifications.queries import notifications_page, unread_notification_count
from domain.notifications.store import EventRef
from domain.posts.create_post import create_post
from tests.support.checks import no_count_drift


class Recorder:
    """A PushSender and NotificationPublisher that remembers what it was given."""

    def __init__(self) -> None:
        self.pushed: list = []
        self.published: list = []

    async def send(self, message) -> None:
        self.pushed.append(message.notification_id)

    async def notification_created(self, recipient_id, notification_id) -> None:
        self.published.append(notification_id)


async def set_like(engine, post_id, user_id, on: bool, shards: int) -> None:
    """Like or unlike without an outbox event (the test runs the consumers itself)."""
    async with engine.begin() as conn:
        sql = (
            "INSERT INTO likes (post_id, user_id) VALUES (:p, :u) ON CONFLICT DO NOTHING"
            if on
            else "DELETE FROM likes WHERE post_id = :p AND user_id = :u"
        )
        result = await conn.execute(text(sql), {"p": post_id, "u": user_id})
        if result.rowcount:
            await add_deltas(conn, [Delta(post_id, "likes", 1 if on else -1)], shards=shards)


async def like_notifications(engine, recipient) -> list[tuple]:
    async with engine.connect() as conn:
        items, _ = await notifications_page(conn, recipient, first=50)
        unread = await unread_notification_count(conn, recipient)
    return [(n.kind, n.actor_id, n.count, n.read_at is None) for n in items], unread


@pytest.fixture
def config(settings):
    return settings.notification_config


@pytest.mark.parametrize("order", ["each_at_once", "all_after", "reversed", "likes_first"])
async def test_a_liker_toggling_is_one_person_and_one_push(make_users, engine, config, order):
    author, liker = await make_users(2, prefix="tog")
    post = await create_post(engine, author.id, caption="toggle me", counter_shards=16)
    rec = Recorder()
    delivery = Delivery(engine, push=rec, publisher=rec)
    events: list[tuple[bool, EventRef]] = []

    async def run(on: bool, event: EventRef) -> None:
        use_case = notify_like if on else withdraw_like
        await delivery.deliver(await use_case(engine, config, event, post.id, liker.id))

    for i in range(11):  # like, unlike, ... like: ten toggles after the first like
        on = i % 2 == 0
        await set_like(engine, post.id, liker.id, on, config.counter_shards)
        event = EventRef.of(new_id())
        if order == "each_at_once":
            await run(on, event)
        events.append((on, event))
    if order == "all_after":
        for on, event in events:
            await run(on, event)
    elif order == "reversed":
        for on, event in reversed(events):
            await run(on, event)
    elif order == "likes_first":
        for on, event in sorted(events, key=lambda e: not e[0]):
            await run(on, event)
    for on, event in events:  # every job runs twice (a retry): nothing changes
        await run(on, event)
    items, unread = await like_notifications(engine, author.id)
    assert items == [("like", liker.id, 1, True)]
    assert unread == 1
    assert len(rec.pushed) == 1 and len(rec.published) == 1
    await no_count_drift(engine, author.id, post.id)


async def test_count_is_the_people_behind_it_and_an_unlike_takes_one_out(
    make_users, engine, config
):
    author, *fans = await make_users(4, prefix="ppl")
    post = await create_post(engine, author.id, caption="p", counter_shards=16)
    rec = Recorder()
    delivery = Delivery(engine, push=rec, publisher=rec)
    for fan in fans:
        await set_like(engine, post.id, fan.id, True, config.counter_shards)
        await delivery.deliver(
            await notify_like(engine, config, EventRef.of(new_id()), post.id, fan.id)
        )
    assert (await like_notifications(engine, author.id))[0] == [("like", fans[2].id, 3, True)]
    assert (len(rec.pushed), len(rec.published)) == (1, 3)

    # Read; then the newest liker withdraws: two people, the actor the one before.
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE notifications SET read_at = now() WHERE recipient_id = :r"),
            {"r": author.id},
        )
        await add_deltas(conn, [Delta(author.id, "unread_notifications", -1)], shards=16)
    await set_like(engine, post.id, fans[2].id, False, config.counter_shards)
    await withdraw_like(engine, config, EventRef.of(new_id()), post.id, fans[2].id)
    assert await like_notifications(engine, author.id) == ([("like", fans[1].id, 2, False)], 0)

    # Everyone withdraws: it shows to nobody and is out of the unread count.
    for fan in fans[:2]:
        await set_like(engine, post.id, fan.id, False, config.counter_shards)
        await withdraw_like(engine, config, EventRef.of(new_id()), post.id, fan.id)
    assert await like_notifications(engine, author.id) == ([], 0)
    # One of them likes again within the window: back, quietly (read, as it was).
    await set_like(engine, post.id, fans[0].id, True, config.counter_shards)
    await delivery.deliver(
        await notify_like(engine, config, EventRef.of(new_id()), post.id, fans[0].id)
    )
    assert await like_notifications(engine, author.id) == ([("like", fans[0].id, 1, False)], 0)
    assert (len(rec.pushed), len(rec.published)) == (1, 3)
    await no_count_drift(engine, author.id, post.id)


async def test_an_unlike_that_runs_before_its_like_leaves_nothing(make_users, engine, config):
    author, fan = await make_users(2, prefix="ord")
    post = await create_post(engine, author.id, caption="p", counter_shards=16)
    like, unlike = EventRef.of(new_id()), EventRef.of(new_id())
    await set_like(engine, post.id, fan.id, True, config.counter_shards)
    await set_like(engine, post.id, fan.id, False, config.counter_shards)
    await withdraw_like(engine, config, unlike, post.id, fan.id)
    await notify_like(engine, config, like, post.id, fan.id)
    assert await like_notifications(engine, author.id) == ([], 0)
    await no_count_drift(engine, author.id, post.id)
