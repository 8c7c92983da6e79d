"""A job per (event, consumer) and dispatch right after commit, on a real arq worker with
real PostgreSQL and Redis."""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter

from arq import create_pool
from arq.connections import RedisSettings
from arq.worker import Worker, func
from redis.asyncio import Redis
from sqlalchemy import text

from app.cli.maintenance import _dlq_list, _dlq_replay
from app.container import WorkerDeps, build_worker
from app.jobs import ArqDispatcher
from domain.outbox.jobs import CONSUME_EVENT
from domain.outbox.process import Consumer, list_dead_letters
from domain.outbox.registry import FEED, NOTIFICATIONS
from domain.posts.create_post import create_post
from domain.social.follow_user import follow_user
from tests.support.documents import FOLLOW
from tests.support.worker import WorkerControl
from workers.deps import DEPS
from workers.events import consume_outbox_event, relay_outbox


def _counted(name: str, consumer: Consumer, runs: Counter, broken: asyncio.Event | None):
    """``consumer`` with each run counted in ``runs[name]``; while ``broken`` is set, each
    run fails before doing anything (a push provider that is down)."""

    def wrap(handler):
        async def run(event, event_id):
            runs[name] += 1
            if broken is not None and broken.is_set():
                raise RuntimeError("push provider down")
            await handler(event, event_id)

        return run

    return {event_type: wrap(handler) for event_type, handler in consumer.items()}


async def _run_until_idle(settings, queue: str, deps: WorkerDeps) -> None:
    async def startup(ctx) -> None:
        ctx[DEPS] = deps

    worker = Worker(
        functions=[func(consume_outbox_event, name=CONSUME_EVENT, max_tries=deps.max_attempts)],
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        queue_name=queue,
        on_startup=startup,
        burst=True,
        poll_delay=0.05,
        keep_result=0,
        handle_signals=False,
    )
    try:
        await worker.async_run()
    finally:
        await worker.close()


async def _event_of(engine, topic: str, key: str, value: uuid.UUID):
    async with engine.connect() as conn:
        return (
            await conn.execute(
                text(
                    "SELECT id, dispatched_at IS NOT NULL AS dispatched FROM outbox"
                    " WHERE topic = :t AND payload->>:k = :v"
                ),
                {"t": topic, "k": key, "v": str(value)},
            )
        ).one()


async def test_a_failing_consumer_does_not_rerun_the_others(
    make_users, worker: WorkerControl, settings, engine, capsys
):
    """post.created has two consumers: the feed's fan-out and the notifications'
    mentions. The notifications fail every attempt: the fan-out ran once, not once per
    retry; the dead letter names the notifications alone; replaying it runs them and
    only them (the fan-out still ran once)."""
    author, fan = await make_users(2, prefix="iso")
    await follow_user(engine, fan.id, author.id, counter_shards=4)
    await worker.drain()
    await worker.stop()  # no relay and no consumer but this test's worker, on its queue
    queue = f"roost-test-iso:{uuid.uuid4().hex[:8]}"
    deps = build_worker(settings)
    runs: Counter = Counter()
    broken = asyncio.Event()
    broken.set()
    deps = deps.with_(
        consumers={
            **deps.consumers,
            FEED: _counted(FEED, deps.consumers[FEED], runs, None),
            NOTIFICATIONS: _counted(NOTIFICATIONS, deps.consumers[NOTIFICATIONS], runs, broken),
        },
        max_attempts=3,
    )
    assert deps.stores is not None
    dispatcher = ArqDispatcher(settings.redis_url, queue, deps.registry)
    pool = await create_pool(RedisSettings.from_dsn(settings.redis_url), default_queue_name=queue)
    redis = Redis.from_url(settings.redis_url)
    try:
        # The fan's feed exists (complete, empty), so the fan-out writes to it.
        await deps.stores.feeds.create_empty([fan.id])
        post = await create_post(
            engine,
            author.id,
            caption=f"hello @{fan.username}",
            counter_shards=4,
            dispatcher=dispatcher,
        )
        await _run_until_idle(settings, queue, deps)
        assert runs == {FEED: 1, NOTIFICATIONS: 3}
        (page,) = await deps.stores.feeds.page([fan.id], None, 10)
        assert [e.post_id for e in page] == [post.id]
        event = await _event_of(engine, "post.created", "post_id", post.id)
        assert event.dispatched  # every consumer finished: one done, one dead
        letters = [d for d in await list_dead_letters(engine) if d.event_id == event.id]
        assert [(d.consumer, d.attempts) for d in letters] == [(NOTIFICATIONS, 3)]
        assert "push provider down" in letters[0].error

        capsys.readouterr()
        await _dlq_list(settings, settings.database_url, 1000)  # `roost dlq list`
        listed = [line for line in capsys.readouterr().out.splitlines() if str(event.id) in line]
        assert len(listed) == 1 and "post.created -> notifications" in listed[0]

        broken.clear()
        await _dlq_replay(settings, settings.database_url, [letters[0].id])  # `roost dlq replay`
        assert "Replayed 1 dead letter(s)" in capsys.readouterr().out
        # The relay re-drives the replayed event: one job, for the notifications only.
        assert await relay_outbox({DEPS: deps, "redis": pool}) == 1
        await _run_until_idle(settings, queue, deps)
        assert runs == {FEED: 1, NOTIFICATIONS: 4}
        assert (await _event_of(engine, "post.created", "post_id", post.id)).dispatched
        assert [d for d in await list_dead_letters(engine) if d.event_id == event.id] == []
        async with engine.connect() as conn:
            mentions = await conn.scalar(
                text("SELECT count(*) FROM notifications WHERE recipient_id = :r"),
                {"r": fan.id},
            )
        assert mentions == 1  # the replayed consumer did its work, once
    finally:
        await redis.aclose()
        await pool.aclose()
        await dispatcher.close()
        if deps.services is not None:
            await deps.services.aclose()
        await worker.start()


async def test_a_follow_reaches_the_worker_without_the_relay(
    make_users, worker: WorkerControl, gql, settings, engine
):
    """follow dispatches its event right after the commit: a worker with no relay at all
    consumes it."""
    a, b = await make_users(2, prefix="ffast")
    await worker.drain()
    await worker.stop()
    no_relay = WorkerControl(settings, engine, relay=False)
    await no_relay.start()
    try:
        result = await gql(FOLLOW, {"id": b.gid}, token=a.token)
        assert result["data"]["follow"]["__typename"] == "FollowSuccess"
        # Held back from the relay (it would wait REDRIVE_AFTER_S), yet consumed: only the
        # post-commit dispatch can have enqueued it.
        async with engine.connect() as conn:
            held = await conn.scalar(
                text(
                    "SELECT available_at > created_at + interval '5 seconds' FROM outbox"
                    " WHERE topic = 'follow.created' AND payload->>'follower_id' = :a"
                ),
                {"a": str(a.id)},
            )
        assert held
        await no_relay.drain()
        async with engine.connect() as conn:
            done = await conn.scalars(
                text(
                    "SELECT c.consumer FROM outbox o JOIN outbox_consumers c ON c.event_id = o.id"
                    " WHERE o.topic = 'follow.created' AND o.payload->>'follower_id' = :a"
                    " ORDER BY c.consumer"
                ),
                {"a": str(a.id)},
            )
            assert list(done) == [FEED, NOTIFICATIONS]
    finally:
        await no_relay.stop()
        await worker.start()
