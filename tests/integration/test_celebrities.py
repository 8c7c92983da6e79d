"""``load_celebrities`` on a small population (30 and 60 followers instead of 10,000
and 50,000): exact counters, one transaction, idempotence, the worker fans out.

The database is shared by the run: accounts get unique names, and followers are
drawn only from this test's users (``candidates=``).
"""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import read_counts
from domain.social.verify_counts import verify_follow_counts
from tools.load_celebrities import load_celebrities

HASH = "$argon2id$v=19$m=65536,t=3,p=4$Y2VsZWJ0ZXN0$Y2VsZWJ0ZXN0aGFzaA"


async def _state(engine: AsyncEngine, celebs: list[uuid.UUID], fans: list[uuid.UUID]):
    async with engine.connect() as conn:
        counts = await read_counts(conn, celebs + fans, ["followers", "following", "posts"])
        follows = await conn.scalar(
            text(
                "SELECT count(*) FROM follows WHERE deleted_at IS NULL"
                " AND followee_id = ANY(CAST(:c AS uuid[]))"
            ),
            {"c": celebs},
        )
        posts = await conn.scalar(
            text("SELECT count(*) FROM posts WHERE author_id = ANY(CAST(:c AS uuid[]))"),
            {"c": celebs},
        )
        events = await conn.scalar(
            text(
                "SELECT count(*) FROM outbox o JOIN posts p ON p.id = o.aggregate_id"
                " WHERE o.topic = 'post.created' AND p.author_id = ANY(CAST(:c AS uuid[]))"
            ),
            {"c": celebs},
        )
    return counts, follows, posts, events


async def test_celebrities_exact_idempotent_and_fanned_out(
    engine: AsyncEngine, make_users, worker
) -> None:
    fans = await make_users(70, "fan")
    fan_ids = [u.id for u in fans]
    tag = uuid.uuid4().hex[:8]
    accounts = ((f"celeb30.{tag}", 30), (f"celeb60.{tag}", 60))

    report = await load_celebrities(
        engine, password_hash=HASH, accounts=accounts, candidates=fan_ids
    )
    assert [a.created for a in report.accounts] == [True, True]
    assert [a.followers_added for a in report.accounts] == [30, 60]
    assert [a.posts_added for a in report.accounts] == [3, 3]
    assert [a.username for a in report.accounts] == [name for name, _ in accounts]
    celebs = [a.user_id for a in report.accounts]

    counts, follows, posts, events = await _state(engine, celebs, fan_ids)
    assert counts[(celebs[0], "followers")] == 30
    assert counts[(celebs[1], "followers")] == 60
    assert follows == 90 and posts == 6 and events == 6
    assert all(counts[(c, "posts")] == 3 for c in celebs)
    assert sum(counts[(f, "following")] for f in fan_ids) == 90
    assert all(counts[(f, "following")] in (0, 1, 2) for f in fan_ids)
    assert (await verify_follow_counts(engine)).drift == []

    # The worker fans the posts out like any post, deciding the mode from the new
    # counts: pull at >= 40 followers in the test settings, so only the 60-follower one.
    await worker.drain()
    async with engine.connect() as conn:
        modes = dict(
            (
                await conn.execute(
                    text(
                        "SELECT author_id, mode FROM author_feed_modes"
                        " WHERE author_id = ANY(CAST(:c AS uuid[]))"
                    ),
                    {"c": celebs},
                )
            ).all()
        )
    assert modes.get(celebs[0], "push") == "push"
    assert modes[celebs[1]] == "pull"

    again = await load_celebrities(
        engine, password_hash=HASH, accounts=accounts, candidates=fan_ids
    )
    assert [a.created for a in again.accounts] == [False, False]
    assert [a.user_id for a in again.accounts] == celebs
    assert await _state(engine, celebs, fan_ids) == (counts, follows, posts, events)


async def test_too_few_users_writes_nothing(engine: AsyncEngine, make_users) -> None:
    fans = await make_users(10, "fan")
    tag = uuid.uuid4().hex[:8]
    accounts = ((f"celebok.{tag}", 5), (f"celebbig.{tag}", 11))
    with pytest.raises(ValueError, match="needs 11 followers"):
        await load_celebrities(
            engine, password_hash=HASH, accounts=accounts, candidates=[u.id for u in fans]
        )
    async with engine.connect() as conn:
        present = await conn.scalar(
            text("SELECT count(*) FROM users WHERE username = ANY(CAST(:n AS text[]))"),
            {"n": [n for n, _ in accounts]},
        )
    assert present == 0  # one transaction: the first account was rolled back too


async def test_bad_username_is_refused(engine: AsyncEngine) -> None:
    with pytest.raises(ValueError):
        await load_celebrities(engine, password_hash=HASH, accounts=(("Celeb 10k!", 1),))
