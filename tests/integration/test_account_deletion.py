"""Deleting an account (docs/api/account-lifecycle.md "Account lifecycle"): deleteAccount
hides it at once and moves every count it was part of; after the grace period the purge
deletes its personal data, batch by batch and resumably, corrects every counter of
everyone else (unread notifications that pointed at its posts and comments included),
cleans the cached feeds, and leaves `roost counts verify` without drift."""

from __future__ import annotations

import datetime as dt
import time
import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from adapters.feedstore.ranking_signals import (
    RedisRankingSignals,
    author_key,
    close_key,
    kinds_key,
)
from adapters.feedstore.stores import feed_stores
from app.container import WorkerDeps
from domain.accounts.config import AccountsConfig
from domain.accounts.purge import (
    placeholder_username,
    prune_released_usernames,
    purge_account,
    purge_due_accounts,
)
from domain.counters import Delta, add_deltas, read_counts
from domain.counters.verify import verify_counts
from domain.db import new_id, utcnow
from domain.engagement.add_comment import add_comment
from domain.engagement.like_post import like_post
from domain.errors import ValidationError
from domain.feed.graph_events import merge_author_into_feed
from domain.feed.ports import Engagement
from domain.identity.errors import UsernameTakenError
from domain.identity.sign_up import sign_up
from domain.moderation.report_user import report_user
from domain.notifications.queries import UNREAD_KIND
from domain.posts.create_post import create_post
from domain.social.block_user import block_user
from domain.social.mute_user import mute_user
from tests.support.users import TEST_PASSWORD
from workers.accounts import purge_accounts
from workers.deps import DEPS

DELETE = """mutation($p: String!) { deleteAccount(input: { password: $p }) {
  __typename ... on DeleteAccountSuccess { deletionDueAt } ... on Error { code } } }"""
FEED = "{ viewer { feed(first: 5) { edges { node { id } } } } }"
USER = "query($u: String!) { user(username: $u) { id followerCount followingCount } }"

#: Others that follow, and are followed by, the deleted account.
FANS = 1500
#: Followers whose cached feed holds the deleted account's posts.
FEED_OWNERS = 12


async def no_drift(engine, ids) -> None:
    wanted = set(ids)
    report = await verify_counts(engine)
    assert [d for d in report.drift if d.entity_id in wanted] == []


async def count(engine, entity, kind) -> int:
    async with engine.connect() as conn:
        return (await read_counts(conn, [entity], [kind]))[(entity, kind)]


async def rows_naming(engine, user_id: uuid.UUID) -> dict[str, int]:
    """How many rows of each table still name the account."""
    checks = {
        "follows": "SELECT count(*) FROM follows WHERE follower_id = :u OR followee_id = :u",
        "posts": "SELECT count(*) FROM posts WHERE author_id = :u",
        "comments": "SELECT count(*) FROM comments WHERE author_id = :u",
        "likes": "SELECT count(*) FROM likes WHERE user_id = :u",
        "blocks": "SELECT count(*) FROM blocks WHERE blocker_id = :u OR blocked_id = :u",
        "mutes": "SELECT count(*) FROM mutes WHERE muter_id = :u OR muted_id = :u",
        "follow_requests": "SELECT count(*) FROM follow_requests"
        " WHERE requester_id = :u OR target_id = :u",
        "notifications": "SELECT count(*) FROM notifications"
        " WHERE recipient_id = :u OR actor_id = :u",
        "notification_actors": "SELECT count(*) FROM notification_actors WHERE actor_id = :u",
        "sessions": "SELECT count(*) FROM sessions WHERE user_id = :u",
        "device_tokens": "SELECT count(*) FROM device_tokens WHERE user_id = :u",
        "data_exports": "SELECT count(*) FROM data_exports WHERE user_id = :u",
        "email_tokens": "SELECT count(*) FROM email_tokens WHERE user_id = :u",
        "reports": "SELECT count(*) FROM reports WHERE reporter_id = :u OR user_id = :u",
        "counter_shards": "SELECT count(*) FROM counter_shards WHERE entity_id = :u",
        "user_search": "SELECT count(*) FROM user_search WHERE user_id = :u",
    }
    out = {}
    async with engine.connect() as conn:
        for table, sql in checks.items():
            out[table] = await conn.scalar(text(sql), {"u": user_id})
    return out


@pytest.fixture
async def redis(settings):
    r = Redis.from_url(settings.redis_url)
    yield r
    await r.aclose()


async def bulk_follows(engine, k: int, pairs: list[tuple[uuid.UUID, uuid.UUID]]) -> None:
    """Live follows between active accounts, with the counters they move (what follow_user
    writes, without a transaction per follow)."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO follows (id, follower_id, followee_id)"
                " SELECT gen_random_uuid(), a, b FROM unnest(CAST(:a AS uuid[]),"
                " CAST(:b AS uuid[])) AS p(a, b)"
            ),
            {"a": [a for a, _ in pairs], "b": [b for _, b in pairs]},
        )
        deltas = [Delta(b, "followers", 1) for _, b in pairs]
        deltas += [Delta(a, "following", 1) for a, _ in pairs]
        await add_deltas(conn, deltas, shards=k)


async def test_deleting_an_account_with_thousands_of_follows_hides_it_then_purges_it_exactly(
    gql, engine, make_users, settings, worker, redis
):
    k = settings.counter_shards
    stores = feed_stores(redis, settings.feed_config)
    (target,) = await make_users(1, prefix="gone")
    fans = await make_users(FANS, prefix="fan")
    c, b = fans[0], fans[1]  # c writes a comment on target's posts, b replies around
    others = [f.id for f in fans]
    await bulk_follows(
        engine, k, [(target.id, o) for o in others] + [(o, target.id) for o in others]
    )
    # History: ended follows both ways (no counter counts them, the purge deletes them).
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO follows (id, follower_id, followee_id, deleted_at)"
                " SELECT gen_random_uuid(), :t, x, now() FROM unnest(CAST(:xs AS uuid[])) x"
                " UNION ALL SELECT gen_random_uuid(), x, :t, now()"
                " FROM unnest(CAST(:xs AS uuid[])) x"
            ),
            {"t": target.id, "xs": others[-40:]},
        )
    # The target's posts; others like and comment on them, c's comment gets b's reply
    # (a REPLY notification to c that points at the target's post).
    own = [
        await create_post(engine, target.id, caption=f"mine {i} #gone", counter_shards=k)
        for i in range(25)
    ]
    for f in fans[2:12]:
        await like_post(engine, f.id, own[0].id, counter_shards=k)
    c_top = await add_comment(engine, c.id, own[0].id, "c on the target's post", counter_shards=k)
    await add_comment(engine, b.id, own[0].id, "b answers c", parent_id=c_top.id, counter_shards=k)
    await add_comment(engine, target.id, own[1].id, "the target on its own", counter_shards=k)
    # Others' posts: the target likes and comments on them; b replies under its comment
    # and mentions c there (a MENTION notification to c that points at that reply).
    theirs = [
        await create_post(engine, f.id, caption=f"theirs {i}", counter_shards=k)
        for i, f in enumerate(fans[30:54])
    ]
    for p in theirs:
        await like_post(engine, target.id, p.id, counter_shards=k)
    await like_post(engine, c.id, theirs[5].id, counter_shards=k)
    top = await add_comment(engine, target.id, theirs[0].id, "the target speaks", counter_shards=k)
    await add_comment(
        engine,
        b.id,
        theirs[0].id,
        f"b to the target, cc @{c.username}",
        parent_id=top.id,
        counter_shards=k,
    )
    c_on_theirs = await add_comment(engine, c.id, theirs[1].id, "c elsewhere", counter_shards=k)
    await add_comment(
        engine,
        target.id,
        theirs[1].id,
        "the target answers c",
        parent_id=c_on_theirs.id,
        counter_shards=k,
    )
    for p in theirs[2:]:
        await add_comment(engine, target.id, p.id, "the target again", counter_shards=k)
    # Blocks and mutes both ways, a report each way, a device, an export.
    for f in fans[100:103]:
        await block_user(engine, target.id, f.id, counter_shards=k)
    await block_user(engine, fans[104].id, target.id, counter_shards=k)
    await mute_user(engine, target.id, fans[105].id, counter_shards=k)
    await mute_user(engine, fans[106].id, target.id, counter_shards=k)
    await report_user(engine, target.id, fans[107].id, reason="spam", note="")
    await report_user(engine, fans[108].id, target.id, reason="harassment", note="rude")
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO device_tokens (id, user_id, session_id, platform, token)"
                " VALUES (gen_random_uuid(), :u, :s, 'ios', :t)"
            ),
            {"u": target.id, "s": target.session_id, "t": f"tok-{uuid.uuid4().hex}"},
        )
        await conn.execute(
            text("INSERT INTO data_exports (id, user_id) VALUES (gen_random_uuid(), :u)"),
            {"u": target.id},
        )
        await conn.execute(
            text(
                "INSERT INTO email_tokens (id, user_id, purpose, email, token_hash, expires_at)"
                " VALUES (gen_random_uuid(), :u, 'verify_email', 'x@example.org', :h, now())"
            ),
            {"u": target.id, "h": uuid.uuid4().bytes},
        )
    await worker.drain(60)

    # Cached feeds holding the target's posts: some followers', and its own.
    owners = fans[200 : 200 + FEED_OWNERS]
    for f in [*owners, target]:
        assert "errors" not in await gql(FEED, token=f.token)
    for f in owners:
        assert await merge_author_into_feed(engine, stores, settings.feed_config, f.id, target.id)
    members = {p.id.bytes for p in own}
    for f in owners:
        held = set(await redis.zrange(stores.feeds.key(f.id), 0, -1))
        assert members <= held

    ids = [target.id, *others, *(p.id for p in own), *(p.id for p in theirs)]
    await no_drift(engine, ids)
    before = {
        "fan_followers": await count(engine, fans[500].id, "followers"),
        "fan_following": await count(engine, fans[500].id, "following"),
        "likes": await count(engine, theirs[5].id, "likes"),
        "comments": await count(engine, theirs[0].id, "comments"),
    }
    assert before == {"fan_followers": 1, "fan_following": 1, "likes": 2, "comments": 2}

    # deleteAccount: hidden at once, sessions over, counts moved.
    out = await gql(DELETE, {"p": TEST_PASSWORD}, token=target.token)
    assert out["data"]["deleteAccount"]["__typename"] == "DeleteAccountSuccess", out
    assert (await gql(FEED, token=target.token))["errors"][0]["extensions"]["code"] == (
        "UNAUTHENTICATED"
    )
    assert (await gql(USER, {"u": target.username}))["data"]["user"] is None
    seen = (await gql(USER, {"u": fans[500].username}))["data"]["user"]
    assert (seen["followerCount"], seen["followingCount"]) == (0, 0)
    assert await count(engine, theirs[5].id, "likes") == 1
    assert await count(engine, theirs[0].id, "comments") == 0  # its comment and b's reply
    await no_drift(engine, ids)
    async with engine.connect() as conn:
        assert (
            await conn.scalar(text("SELECT status FROM users WHERE id = :u"), {"u": target.id})
            == "pending_deletion"
        )

    # What still points at the account's content from others: c's unread notifications
    # of b's REPLY on its post and b's MENTION in a reply under its comment.
    c_unread = await count(engine, c.id, UNREAD_KIND)
    async with engine.connect() as conn:
        pointing = await conn.scalar(
            text(
                "SELECT count(*) FROM notifications n WHERE n.recipient_id = :c"
                " AND n.read_at IS NULL AND n.count > 0"
                " AND (n.post_id = ANY(CAST(:posts AS uuid[]))"
                " OR n.comment_id IN (SELECT id FROM comments WHERE parent_id = :top))"
            ),
            {"c": c.id, "posts": [p.id for p in own], "top": top.id},
        )
    assert pointing == 2

    # The grace period is over: the purge, first cut short after one batch (resumable,
    # exact when it stops), then to the end through the worker's job.
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET deletion_due_at = now() - interval '1 second' WHERE id = :u"),
            {"u": target.id},
        )
    # Batches of 500: the first call deletes the posts, the comments and one batch of
    # the 3,080 follows, then stops at its (past) deadline.
    small = AccountsConfig(purge_batch=500)
    done = await purge_account(
        engine,
        target.id,
        config=small,
        counter_shards=k,
        stores=stores,
        feed_config=settings.feed_config,
        deadline=time.monotonic() - 1,
    )
    assert done is False
    await no_drift(engine, ids)
    # The worker's job: a few seconds a run (JOB_TIMEOUT_S), each run resuming the last
    # (the worker's own cron may run beside it: each row and correction goes once).
    ctx = {
        DEPS: WorkerDeps(
            engine,
            settings=settings.model_copy(update={"account_purge_batch": 200}),
            stores=stores,
        )
    }
    for _ in range(30):
        await purge_accounts(ctx)
        async with engine.connect() as conn:
            if await conn.scalar(
                text("SELECT purged_at IS NOT NULL FROM users WHERE id = :u"), {"u": target.id}
            ):
                break
    else:
        raise AssertionError("the purge never finished")

    left = await rows_naming(engine, target.id)
    assert left == dict.fromkeys(left, 0)
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT username, display_name, bio, email, status, purged_at IS NOT NULL"
                    " AS purged FROM users WHERE id = :u"
                ),
                {"u": target.id},
            )
        ).one()
        assert tuple(row) == (
            placeholder_username(target.id),
            "Deleted account",
            "",
            None,
            "deleted",
            True,
        )
        assert (
            await conn.scalar(
                text("SELECT count(*) FROM posts WHERE id = ANY(CAST(:ids AS uuid[]))"),
                {"ids": [p.id for p in own]},
            )
            == 0
        )
    # Everyone else's counters: exact, and as they were once the account was hidden.
    await no_drift(engine, ids)
    assert await count(engine, fans[500].id, "followers") == 0
    assert await count(engine, theirs[5].id, "likes") == 1
    assert await count(engine, theirs[0].id, "comments") == 0
    assert await count(engine, theirs[1].id, "comments") == 1  # c's comment stays
    assert await count(engine, c.id, UNREAD_KIND) == c_unread - pointing
    # The cached feeds: the target's posts are out of its followers' feeds (the rest
    # stays), its own timelines are gone.
    for f in owners:
        held = set(await redis.zrange(stores.feeds.key(f.id), 0, -1))
        assert held and not members & held
    assert not await redis.exists(stores.feeds.key(target.id))
    assert not await redis.exists(stores.author_posts.key(target.id))
    # Idempotent: nothing more to do; the username is held (USERNAME_HOLD_DAYS).
    run = await purge_due_accounts(
        engine, small, counter_shards=k, stores=stores, feed_config=settings.feed_config
    )
    assert target.id not in run.purged
    with pytest.raises(UsernameTakenError):
        await sign_up(
            engine,
            settings.token_config,
            username=target.username,
            email=f"{uuid.uuid4().hex[:8]}@example.org",
            password=TEST_PASSWORD,
            display_name="New",
        )


async def test_the_purge_forgets_the_ranked_feeds_signals_of_the_account(
    engine, make_users, settings, redis
):
    """The ranked feed keeps, per account, whom it engaged with, the media kinds it
    engages with, and its average as an author: personal data that the purge deletes."""
    stores = feed_stores(redis, settings.feed_config)
    target, other = await make_users(2)
    signals = RedisRankingSignals(stores.feeds.store, settings.feed_config.ranking)
    now = utcnow()
    # The target likes the other's post (viewer signals), the other likes the target's.
    for actor, author in ((target.id, other.id), (other.id, target.id)):
        await signals.record(
            Engagement(actor, new_id(), author, "image", f"l:{actor}", now), now=now
        )
    keys = [close_key(target.id), kinds_key(target.id), author_key(target.id)]
    assert await redis.exists(*keys) == 3
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE users SET status = 'deleted', deletion_due_at = now() - interval '1 s'"
                " WHERE id = :u"
            ),
            {"u": target.id},
        )
    assert await purge_account(
        engine,
        target.id,
        config=AccountsConfig(),
        counter_shards=settings.counter_shards,
        stores=stores,
        feed_config=settings.feed_config,
    )
    assert await redis.exists(*keys) == 0
    assert await redis.exists(close_key(other.id), author_key(other.id)) == 2  # theirs stay


async def test_the_tombstone_prefix_is_reserved_at_sign_up(engine, settings):
    with pytest.raises(ValidationError) as refused:
        await sign_up(
            engine,
            settings.token_config,
            username="deleted." + uuid.uuid4().hex[:22],
            email=f"{uuid.uuid4().hex[:8]}@example.org",
            password=TEST_PASSWORD,
            display_name="Squatter",
        )
    assert refused.value.field == "username" and "reserved" in str(refused.value)


async def test_a_squatted_tombstone_name_holds_up_no_purge(engine, make_users, settings):
    """A row that holds an account's placeholder (signed up before the prefix was
    reserved) costs that account another tombstone name, and every due account is
    purged in the same run."""
    first, second, squatter = await make_users(3)
    taken = placeholder_username(first.id)
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET username = :n WHERE id = :u"), {"n": taken, "u": squatter.id}
        )
        for i, u in enumerate((first, second)):  # first is due first
            await conn.execute(
                text(
                    "UPDATE users SET status = 'deleted',"
                    " deletion_due_at = now() - make_interval(secs => 1000 - :i) WHERE id = :u"
                ),
                {"u": u.id, "i": i},
            )
    run = await purge_due_accounts(
        engine,
        AccountsConfig(),
        counter_shards=settings.counter_shards,
        stores=None,
        feed_config=settings.feed_config,
        limit=10_000,
    )
    assert {first.id, second.id} <= set(run.purged), run
    assert not run.failed
    async with engine.connect() as conn:
        names = dict(
            (
                await conn.execute(
                    text("SELECT id, username FROM users WHERE id = ANY(:ids)"),
                    {"ids": [first.id, second.id, squatter.id]},
                )
            ).all()
        )
    assert names[squatter.id] == taken
    assert names[first.id].startswith("deleted.") and names[first.id] != taken
    assert names[second.id] == placeholder_username(second.id)


SIGN_UP = """mutation($u: String!, $e: String!) { signUp(input: { username: $u, email: $e,
  password: "correct horse battery staple", displayName: "Next" }) { __typename
  ... on Error { code message } } }"""


async def _purge_now(engine, settings, user, config: AccountsConfig) -> None:
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "UPDATE users SET status = 'deleted', deletion_due_at = now() - interval '1 s'"
                " WHERE id = :u"
            ),
            {"u": user.id},
        )
    run = await purge_due_accounts(
        engine,
        config,
        counter_shards=settings.counter_shards,
        stores=None,
        feed_config=settings.feed_config,
        limit=10_000,
    )
    assert user.id in run.purged and not run.failed, run


async def test_a_purged_accounts_username_is_held_before_anyone_takes_it(
    engine, make_users, settings, gql
):
    held, released = await make_users(2)
    await _purge_now(engine, settings, held, AccountsConfig())
    out = await gql(SIGN_UP, {"u": held.username, "e": f"{uuid.uuid4().hex[:8]}@example.org"})
    refused = out["data"]["signUp"]
    assert refused["code"] == "USERNAME_TAKEN" and "reserved" in refused["message"], refused
    # Upper case is the same name.
    out = await gql(
        SIGN_UP, {"u": held.username.upper(), "e": f"{uuid.uuid4().hex[:8]}@example.org"}
    )
    assert out["data"]["signUp"]["code"] == "USERNAME_TAKEN"
    async with engine.connect() as conn:
        assert (
            await conn.scalar(
                text("SELECT count(*) FROM users WHERE username = :n"), {"n": held.username}
            )
        ) == 0
    # Once the hold is over (here: none at all), the name is anyone's.
    await _purge_now(engine, settings, released, AccountsConfig(username_hold=dt.timedelta(0)))
    out = await gql(SIGN_UP, {"u": released.username, "e": f"{uuid.uuid4().hex[:8]}@example.org"})
    assert out["data"]["signUp"]["__typename"] == "SignUpSuccess", out
    # The worker's prune forgets the hold that is over and keeps the one that is not.
    assert await prune_released_usernames(engine) >= 1
    async with engine.connect() as conn:
        names = set(await conn.scalars(text("SELECT username FROM released_usernames")))
    assert held.username.lower() in {n.lower() for n in names}
    assert released.username.lower() not in {n.lower() for n in names}
