"""Banning, reinstating and deleting an account (domain.moderation.set_user_status): the
counters of everyone it touched move in the same transaction, `roost counts verify`
finds no drift, also when writes race with the status change, and what it notified
others of is gone."""

from __future__ import annotations

import asyncio
import random
import uuid

import pytest
from sqlalchemy import text

from domain.counters import read_counts
from domain.engagement.add_comment import add_comment
from domain.engagement.delete_comment import delete_comment
from domain.engagement.like_post import like_post, unlike_post
from domain.errors import DomainError, NotFoundError, ValidationError
from domain.moderation.set_user_status import set_user_status
from domain.posts.create_post import create_post
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.unfollow_user import unfollow_user
from tests.support.checks import no_count_drift


async def counts(engine, entity: uuid.UUID, *kinds: str) -> tuple[int, ...]:
    async with engine.connect() as conn:
        got = await read_counts(conn, [entity], kinds)
    return tuple(got[(entity, k)] for k in kinds)


@pytest.fixture
def k(settings) -> int:
    return settings.counter_shards


async def test_a_ban_takes_the_account_out_of_every_count_and_reinstatement_puts_it_back(
    make_users, engine, k
):
    x, a, b, d = await make_users(4, prefix="mod")
    await follow_user(engine, x.id, a.id, counter_shards=k)
    await follow_user(engine, b.id, x.id, counter_shards=k)
    post = await create_post(engine, a.id, caption="a post", counter_shards=k)
    await like_post(engine, x.id, post.id, counter_shards=k)
    await like_post(engine, d.id, post.id, counter_shards=k)
    top = await add_comment(engine, x.id, post.id, "x here", counter_shards=k)
    await add_comment(engine, d.id, post.id, "d answers x", parent_id=top.id, counter_shards=k)
    d_top = await add_comment(engine, d.id, post.id, "d here", counter_shards=k)
    await add_comment(engine, x.id, post.id, "x answers d", parent_id=d_top.id, counter_shards=k)
    x_post = await create_post(engine, x.id, caption="x's own", counter_shards=k)
    await like_post(engine, a.id, x_post.id, counter_shards=k)
    before = (
        await counts(engine, a.id, "followers"),
        await counts(engine, b.id, "following"),
        await counts(engine, post.id, "likes", "comments"),
        await counts(engine, x.id, "followers", "following", "posts"),
    )
    assert before == ((1,), (1,), (2, 4), (1, 1, 1))
    ids = (x.id, a.id, b.id, d.id, post.id, x_post.id)

    assert await set_user_status(engine, x.id, "banned", counter_shards=k)
    assert not await set_user_status(engine, x.id, "banned", counter_shards=k)  # idempotent
    assert await counts(engine, a.id, "followers") == (0,)
    assert await counts(engine, b.id, "following") == (0,)
    # x's like, x's comment, d's reply under it, x's reply under d's comment
    assert await counts(engine, post.id, "likes", "comments") == (1, 1)
    assert await counts(engine, x.id, "followers", "following", "posts") == (1, 1, 1)
    await no_count_drift(engine, *ids)

    assert await set_user_status(engine, x.id, "active", counter_shards=k)
    after = (
        await counts(engine, a.id, "followers"),
        await counts(engine, b.id, "following"),
        await counts(engine, post.id, "likes", "comments"),
        await counts(engine, x.id, "followers", "following", "posts"),
    )
    assert after == before
    await no_count_drift(engine, *ids)

    assert await set_user_status(engine, x.id, "deleted", counter_shards=k)
    assert await counts(engine, post.id, "likes", "comments") == (1, 1)
    with pytest.raises(ValidationError):
        await set_user_status(engine, x.id, "active", counter_shards=k)
    await no_count_drift(engine, *ids)
    with pytest.raises(NotFoundError):
        await set_user_status(engine, uuid.uuid4(), "banned", counter_shards=k)
    with pytest.raises(ValidationError):
        await set_user_status(engine, a.id, "frozen", counter_shards=k)  # type: ignore[arg-type]


async def test_an_inactive_account_cannot_move_a_counter(make_users, engine, k):
    x, a = await make_users(2, prefix="mod")
    post = await create_post(engine, a.id, caption="p", counter_shards=k)
    await like_post(engine, x.id, post.id, counter_shards=k)
    await follow_user(engine, a.id, x.id, counter_shards=k)
    await set_user_status(engine, x.id, "banned", counter_shards=k)
    assert not await unlike_post(engine, x.id, post.id, counter_shards=k)
    assert not await unfollow_user(engine, a.id, x.id, counter_shards=k)
    with pytest.raises(DomainError):
        await like_post(engine, x.id, post.id, counter_shards=k)
    with pytest.raises(DomainError):
        await add_comment(engine, x.id, post.id, "still here?", counter_shards=k)
    with pytest.raises(DomainError):
        await follow_user(engine, x.id, a.id, counter_shards=k)
    # a block of (or by) the banned account ends the follow without moving a counter
    assert await block_user(engine, a.id, x.id, counter_shards=k)
    await no_count_drift(engine, x.id, a.id, post.id)
    assert await counts(engine, post.id, "likes") == (0,)


async def test_status_changes_racing_with_every_kind_of_write_leave_no_drift(make_users, engine, k):
    """x is banned and reinstated again and again while others follow and unfollow x,
    x follows and likes, others reply to x's comments and delete their replies, and x
    deletes its comments: every write waits for a status change or is seen by it."""
    x, author = await make_users(2, prefix="race")
    fans = await make_users(12, prefix="race")
    posts = [
        (await create_post(engine, author.id, caption=f"p{i}", counter_shards=k)).id
        for i in range(3)
    ]
    tops = [(await add_comment(engine, x.id, p, "x says", counter_shards=k)).id for p in posts]
    rng = random.Random(9)

    async def attempt(coro) -> None:
        try:
            await coro
        except DomainError:
            pass  # refused while x is banned: what the rule says

    async def fan_work(fan) -> None:
        for _ in range(4):
            await attempt(follow_user(engine, fan.id, x.id, counter_shards=k))
            p = rng.randrange(3)
            await attempt(
                add_comment(engine, fan.id, posts[p], "re", parent_id=tops[p], counter_shards=k)
            )
            await attempt(like_post(engine, fan.id, posts[p], counter_shards=k))
            await attempt(unfollow_user(engine, fan.id, x.id, counter_shards=k))
            await attempt(unlike_post(engine, fan.id, posts[p], counter_shards=k))

    async def x_work() -> None:
        for i in range(6):
            await attempt(follow_user(engine, x.id, fans[i].id, counter_shards=k))
            await attempt(like_post(engine, x.id, posts[i % 3], counter_shards=k))
            await attempt(add_comment(engine, x.id, posts[i % 3], "more", counter_shards=k))
            await attempt(unlike_post(engine, x.id, posts[(i + 1) % 3], counter_shards=k))

    async def moderator() -> None:
        for i in range(8):
            await set_user_status(
                engine, x.id, "banned" if i % 2 == 0 else "active", counter_shards=k
            )
            await asyncio.sleep(0)

    await asyncio.gather(moderator(), x_work(), *(fan_work(f) for f in fans))
    # Whether a fan's reply landed while x was active depends on the interleaving: one
    # reply under each of x's comments now (x is active: the moderator's last change),
    # so the last race below always has replies to delete and to keep.
    for p, top in zip(posts, tops, strict=True):
        await add_comment(engine, fans[0].id, p, "re", parent_id=top, counter_shards=k)
    # and a deletion of x's comments (with the replies under them) racing a last ban
    await asyncio.gather(
        set_user_status(engine, x.id, "banned", counter_shards=k),
        *(attempt(delete_comment(engine, author.id, t, counter_shards=k)) for t in tops[:2]),
    )
    await no_count_drift(engine, x.id, author.id, *(f.id for f in fans), *posts)
    async with engine.connect() as conn:
        replies = await conn.scalar(
            text("SELECT count(*) FROM comments WHERE parent_id = ANY(CAST(:t AS uuid[]))"),
            {"t": tops},
        )
    assert replies > 0  # at least the reply under the comment that was not deleted
