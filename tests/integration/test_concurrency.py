"""Counts stay exact under real concurrency (docs/seeds/follower-count-crdt-issue.md §5).

Every test fires its mutations at once through the GraphQL API (asyncio.gather over the
ASGI app; each request runs its own transaction on its own pooled connection), then
checks the counters against the follow rows themselves.
"""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from sqlalchemy import text

from app.asgi import create_app
from app.database import create_engine
from domain.counters import compact
from domain.social.pairs import lock_pair, pair_lock_key
from domain.social.verify_counts import verify_follow_counts
from tests.support.actions import counts
from tests.support.checks import live_rows
from tests.support.documents import BLOCK, FOLLOW, UNFOLLOW
from tests.support.graphql import GQL


async def assert_no_drift(engine) -> None:
    report = await verify_follow_counts(engine)
    assert report.drift == [], report.drift[:5]


async def _ok(gql, query, target, actor, typename):
    out = await gql(query, {"id": target.gid}, token=actor.token)
    assert "errors" not in out, out
    result = next(iter(out["data"].values()))
    assert result["__typename"] == typename, result
    return result


async def test_100_distinct_users_follow_one_user_at_once(gql, make_users, engine):
    (star,) = await make_users(1)
    fans = await make_users(100)
    await asyncio.gather(*(_ok(gql, FOLLOW, star, f, "FollowSuccess") for f in fans))
    assert await counts(gql, star) == (100, 0)
    assert await live_rows(engine, star.id) == 100
    await assert_no_drift(engine)


async def test_50_follows_and_30_unfollows_at_once_leave_20(gql, make_users, engine):
    (star,) = await make_users(1)
    fans = await make_users(50)

    async def follow_then_maybe_unfollow(i, fan):
        await _ok(gql, FOLLOW, star, fan, "FollowSuccess")
        if i < 30:
            await _ok(gql, UNFOLLOW, star, fan, "UnfollowSuccess")

    await asyncio.gather(*(follow_then_maybe_unfollow(i, f) for i, f in enumerate(fans)))
    assert await counts(gql, star) == (20, 0)
    assert await live_rows(engine, star.id) == 20
    await assert_no_drift(engine)


async def test_same_user_following_twice_at_once_counts_once(gql, make_users, engine):
    star, fan = await make_users(2)
    await asyncio.gather(*(_ok(gql, FOLLOW, star, fan, "FollowSuccess") for _ in range(10)))
    assert await counts(gql, star) == (1, 0)
    assert await counts(gql, fan) == (0, 1)
    assert await live_rows(engine, star.id) == 1


async def test_concurrent_unfollows_of_one_pair_subtract_once(gql, make_users, engine):
    star, fan, stranger = await make_users(3)
    await _ok(gql, FOLLOW, star, fan, "FollowSuccess")
    await asyncio.gather(*(_ok(gql, UNFOLLOW, star, fan, "UnfollowSuccess") for _ in range(10)))
    # unfollowing someone never followed subtracts nothing either
    await asyncio.gather(*(_ok(gql, UNFOLLOW, star, stranger, "UnfollowSuccess") for _ in range(5)))
    assert await counts(gql, star) == (0, 0)
    assert await counts(gql, fan) == (0, 0)
    assert await counts(gql, stranger) == (0, 0)
    async with engine.connect() as conn:
        negative = await conn.scalar(
            text(
                "SELECT count(*) FROM (SELECT entity_id, kind FROM counter_shards"
                " GROUP BY entity_id, kind HAVING sum(value) < 0) n"
            )
        )
    assert negative == 0
    await assert_no_drift(engine)


async def test_compaction_during_writes_leaves_every_count_unchanged(gql, make_users, engine):
    stars = await make_users(3)
    fans = await make_users(60)
    # Spread writes over every shard first.
    await asyncio.gather(
        *(_ok(gql, FOLLOW, stars[i % 3], f, "FollowSuccess") for i, f in enumerate(fans))
    )
    before = [await counts(gql, s) for s in stars]
    async with engine.connect() as conn:
        shard_rows = await conn.scalar(
            text("SELECT count(*) FROM counter_shards WHERE entity_id = ANY(:ids)"),
            {"ids": [s.id for s in stars]},
        )
    assert shard_rows > 3  # several shards per counter before compaction

    folded = await compact(engine)
    assert folded >= 3
    assert [await counts(gql, s) for s in stars] == before
    async with engine.connect() as conn:
        shard_rows = await conn.scalar(
            text("SELECT count(*) FROM counter_shards WHERE entity_id = ANY(:ids)"),
            {"ids": [s.id for s in stars]},
        )
    assert shard_rows == 3  # one (shard 0) row per counter

    # Now compact again while 60 more follows and 20 unfollows run.
    more = await make_users(60)

    async def writes():
        await asyncio.gather(
            *(_ok(gql, FOLLOW, stars[i % 3], f, "FollowSuccess") for i, f in enumerate(more)),
            *(
                _ok(gql, UNFOLLOW, stars[i % 3], f, "UnfollowSuccess")
                for i, f in enumerate(fans[:20])
            ),
        )

    async def compactions():
        for _ in range(10):
            await compact(engine, batch=2)
            await asyncio.sleep(0)

    await asyncio.gather(writes(), compactions())
    await compact(engine)
    expected = [await live_rows(engine, s.id) for s in stars]
    assert sum(expected) == 60 + 60 - 20
    assert [(await counts(gql, s))[0] for s in stars] == expected
    await assert_no_drift(engine)


async def test_two_app_instances_writing_sum_their_counts(settings, make_users, engine):
    """Two app instances, each with its own engine and pool, write follows of one user."""
    (star,) = await make_users(1)
    fans = await make_users(80)
    engines = [create_engine(settings.database_url, pool_size=5, max_overflow=10) for _ in "ab"]
    try:
        clients = [
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(settings, engine=e)),
                base_url="http://roost.test",
            )
            for e in engines
        ]
        gqls = [GQL(c) for c in clients]
        await asyncio.gather(
            *(_ok(gqls[i % 2], FOLLOW, star, f, "FollowSuccess") for i, f in enumerate(fans))
        )
        for g in gqls:  # both instances read the same exact sum
            assert await counts(g, star) == (80, 0)
        for c in clients:
            await c.aclose()
    finally:
        for e in engines:
            await e.dispose()
    assert await live_rows(engine, star.id) == 80


@pytest.mark.parametrize("rounds", [20])
async def test_follow_racing_block_never_leaves_a_follow_beside_a_block(
    gql, make_users, engine, rounds
):
    """The pair lock serialises follow and block: after the race, a live block between two
    users never coexists with a live follow between them, and the counters agree."""
    pairs = [await make_users(2) for _ in range(rounds)]

    async def race(a, b):
        await asyncio.gather(
            gql(FOLLOW, {"id": b.gid}, token=a.token),
            gql(FOLLOW, {"id": a.gid}, token=b.token),
            gql(BLOCK, {"id": b.gid}, token=a.token),
        )

    await asyncio.gather(*(race(a, b) for a, b in pairs))
    async with engine.connect() as conn:
        both = await conn.scalar(
            text(
                "SELECT count(*) FROM blocks b JOIN follows f ON f.deleted_at IS NULL AND"
                " ((f.follower_id = b.blocker_id AND f.followee_id = b.blocked_id) OR"
                "  (f.follower_id = b.blocked_id AND f.followee_id = b.blocker_id))"
            )
        )
    assert both == 0
    for a, b in pairs:
        assert await counts(gql, a) == (0, 0)
        assert await counts(gql, b) == (0, 0)
    await assert_no_drift(engine)


async def test_lock_pair_holds_the_key_that_pair_lock_key_names(engine):
    """Follow, block and mute take lock_pair; notifications lock the same pairs by key
    (pair_lock_key, in one statement for many): both must name one lock, either order."""
    a, b = uuid.uuid4(), uuid.uuid4()
    async with engine.begin() as holder:
        await lock_pair(holder, a, b)
        async with engine.connect() as other:
            for key in (pair_lock_key(a, b), pair_lock_key(b, a)):
                taken = await other.scalar(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key})
                assert taken is False
            await other.rollback()
    async with engine.connect() as other:  # released with the holder's transaction
        assert await other.scalar(
            text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": pair_lock_key(a, b)}
        )
        await other.rollback()
