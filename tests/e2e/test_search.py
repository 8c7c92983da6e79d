"""User search over GraphQL (docs/api/search.md "User search"): match tiers and their order, who is
left out, the search index following every write of an account, stable paging over a
frozen ranking (also when counts and names change between pages), and bad input."""

from __future__ import annotations

import hashlib
import uuid

import pytest
from redis.asyncio import Redis
from sqlalchemy import text

from domain.db import new_id
from domain.moderation.set_user_status import set_user_status
from domain.search.ranks import refresh_search_ranks
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from tests.support.users import TestUser as User

SEARCH = """query($q: String!, $first: Int, $after: String) {
  searchUsers(query: $q, first: $first, after: $after) {
    edges { cursor score node { id username displayName followerCount } }
    pageInfo { hasNextPage hasPreviousPage endCursor } } }"""


def tag() -> str:
    """A fresh username prefix: each test searches its own corner of the index."""
    return "t" + uuid.uuid4().hex[:7]


@pytest.fixture
def named_users(engine, settings):
    """``await named_users([(username, display name), ...])`` inserts active users with
    those names and returns them (with access tokens) in order."""
    from domain.identity.sessions import open_sessions

    async def _make(specs: list[tuple[str, str]]) -> list[User]:
        rows = [{"id": new_id(), "u": u, "d": d} for u, d in specs]
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash)"
                    " VALUES (:id, :u, :d, 'x')"
                ),
                rows,
            )
        # Each token names a live session.
        tokens = await open_sessions(engine, settings.token_config, [r["id"] for r in rows])
        return [User(r["id"], r["u"], t) for r, t in zip(rows, tokens, strict=True)]

    return _make


async def give_followers(engine, settings, user: User, n: int, make_users) -> None:
    """``n`` new users follow ``user`` (real follows, exact counters)."""
    for fan in await make_users(n, prefix="fan"):
        await follow_user(engine, fan.id, user.id, counter_shards=settings.counter_shards)


async def search(gql, q: str, *, token: str | None = None, first: int = 20, after=None):
    out = await gql(SEARCH, {"q": q, "first": first, "after": after}, token=token)
    assert "errors" not in out, out
    return out["data"]["searchUsers"]


def names(conn: dict) -> list[str]:
    return [e["node"]["username"] for e in conn["edges"]]


async def test_tiers_rank_exact_then_prefix_then_names_then_typos(
    gql, engine, settings, named_users, make_users
):
    t = tag()
    exact, anna, annabel, typo, by_name, by_word, by_fixed_word = await named_users(
        [
            (f"{t}ann", "Someone"),
            (f"{t}anna", "Anna"),
            (f"{t}annabel", "Annabel"),
            (f"{t}amn", "Typo Of The Username"),
            (f"x{t}1", f"{t.upper()}ANN"),  # the display name, exactly (case folded)
            (f"x{t}2", f"Maria {t}annette"),  # a word of the display name starts so
            (f"x{t}3", f"Maria {t}amnette"),  # ... once a typo is corrected
        ]
    )
    await give_followers(engine, settings, annabel, 3, make_users)
    await give_followers(engine, settings, anna, 1, make_users)
    await refresh_search_ranks(engine)

    found = await search(gql, f"@{t.upper()}Ann")
    assert names(found) == [
        exact.username,
        annabel.username,  # prefix, 3 followers
        anna.username,  # prefix, 1 follower
        by_name.username,
        by_word.username,
        by_fixed_word.username,
        typo.username,
    ]
    scores = [e["score"] for e in found["edges"]]
    assert scores[:6] == [40, 30, 30, 25, 20, 15]
    assert 4 <= scores[6] <= 10
    assert found["edges"][1]["node"]["followerCount"] == 3
    assert found["pageInfo"]["hasNextPage"] is False

    # Display-name words in any order, accents and case ignored.
    (jose,) = await named_users([(f"{t}j", f"José {t}Álvarez")])
    assert names(await search(gql, f"{t}alvarez JOSE")) == [jose.username]
    prefixes = await search(gql, f"{t}alv jo")
    assert names(prefixes)[0] == jose.username  # then typos: usernames sharing the tag
    assert prefixes["edges"][0]["score"] == 20


async def test_blocked_banned_and_deleted_are_left_out(gql, engine, settings, named_users):
    t = tag()
    viewer, blocked, blocker, banned, deleted, plain = await named_users(
        [(f"{t}{i}", f"{t} user {i}") for i in range(6)]
    )
    shards = settings.counter_shards
    await block_user(engine, viewer.id, blocked.id, counter_shards=shards)
    await block_user(engine, blocker.id, viewer.id, counter_shards=shards)
    await set_user_status(engine, banned.id, "banned", counter_shards=shards)
    await set_user_status(engine, deleted.id, "deleted", counter_shards=shards)

    mine = names(await search(gql, t, token=viewer.token))
    assert set(mine) == {viewer.username, plain.username}
    by_name = names(await search(gql, f"{t} user", token=viewer.token))
    assert set(by_name) == {viewer.username, plain.username}
    # The blocker does not find the viewer either; an anonymous search finds both.
    assert viewer.username not in names(await search(gql, t, token=blocker.token))
    anonymous = names(await search(gql, t))
    assert set(anonymous) == {viewer.username, blocked.username, blocker.username, plain.username}

    # Reinstated: found again, at once.
    await set_user_status(engine, banned.id, "active", counter_shards=shards)
    assert banned.username in names(await search(gql, t))


async def test_profile_edits_reach_the_index_at_once(gql, named_users):
    t = tag()
    (user,) = await named_users([(f"{t}x", "Old Name")])
    out = await gql(
        """mutation($d: String!) { updateProfile(input: { displayName: $d }) {
           __typename } }""",
        {"d": f"Brand {t}new"},
        token=user.token,
    )
    assert out["data"]["updateProfile"]["__typename"] == "UpdateProfileSuccess"
    assert names(await search(gql, f"brand {t}new")) == [user.username]
    assert names(await search(gql, f"old name {t}")) == []


def ids(conn: dict) -> list[str]:
    return [e["node"]["id"] for e in conn["edges"]]


async def page_through(gql, q: str, first: int, *, token=None, between=None) -> list[str]:
    """The node ids of every page of a search, ``between(n)`` awaited after page n."""
    seen: list[str] = []
    after = None
    n = 0
    while True:
        page = await search(gql, q, token=token, first=first, after=after)
        seen += ids(page)
        n += 1
        assert page["pageInfo"]["hasPreviousPage"] is (after is not None)
        if not page["pageInfo"]["hasNextPage"]:
            return seen
        after = page["pageInfo"]["endCursor"]
        if between:
            await between(n)


async def test_pages_neither_repeat_nor_skip_when_ranks_change_between_them(
    gql, engine, settings, named_users, make_users
):
    t = tag()
    users = await named_users([(f"{t}{i:02d}", f"Member {i}") for i in range(25)])
    for i, user in enumerate(users[:5]):
        await give_followers(engine, settings, user, 5 - i, make_users)
    await refresh_search_ranks(engine)
    before = await page_through(gql, t, 10)
    assert len(before) == len(set(before)) == 25
    assert before[:5] == [u.gid for u in users[:5]]

    async def shuffle(page: int) -> None:
        # The last ones become the most followed and one account is renamed away from
        # the query; the next pages are still slices of the ranking frozen by page 1.
        for user in users[-3:]:
            await give_followers(engine, settings, user, 7, make_users)
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE users SET username = :u WHERE id = :id"),
                {"u": f"z{t}{page}", "id": users[15 + page].id},
            )
        await refresh_search_ranks(engine)

    during = await page_through(gql, t, 10, between=shuffle)
    assert during == before

    # A fresh search ranks again.
    after = await page_through(gql, t, 10)
    assert after[:3] == [u.gid for u in users[-3:]]
    assert len(after) == 23


async def test_without_a_snapshot_pages_resume_from_the_cursor(gql, settings, named_users):
    t = tag()
    users = await named_users([(f"{t}{i:02d}", "Same") for i in range(12)])
    whole = await page_through(gql, t, 5)
    assert sorted(whole) == sorted(u.gid for u in users)
    # The same cursors once the snapshot is gone (expired, Redis flushed): the next
    # pages are ranked again after the cursor's entry, in the same order.
    first = await search(gql, t, first=5)
    fingerprint = hashlib.sha256(t.encode()).hexdigest()[:16]
    redis = Redis.from_url(settings.redis_url)
    try:
        keys = [k async for k in redis.scan_iter(match=f"ranked:*:search:{fingerprint}:*")]
        assert keys, "the first page saved a snapshot"
        await redis.delete(*keys)
    finally:
        await redis.aclose()
    rest = await search(gql, t, first=20, after=first["pageInfo"]["endCursor"])
    assert ids(first) + ids(rest) == whole
    assert rest["pageInfo"]["hasNextPage"] is False


@pytest.mark.parametrize(
    ("variables", "message"),
    [
        ({"q": ""}, "empty"),
        ({"q": "   "}, "empty"),
        ({"q": "@"}, "empty"),  # a leading @ is ignored
        ({"q": " @ "}, "empty"),
        ({"q": "x" * 65}, "limit is 64"),
        ({"q": "a\x00b"}, "control"),
        ({"q": "ab", "first": -1}, "'first'"),
        ({"q": "ab", "first": 101}, "'first'"),
        ({"q": "ab", "after": "bm9wZQ"}, "cursor"),
        ({"q": "ab", "after": "cjE6LTo1OjQwOjE6bm90LWEtdXVpZA"}, "cursor"),
    ],
)
async def test_bad_input_is_a_typed_error(gql, variables, message):
    out = await gql(SEARCH, {"first": 5, **variables})
    (error,) = out["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", out
    assert message in error["message"]


async def test_a_cursor_of_another_query_does_not_leak_its_results(gql, named_users):
    t, u = tag(), tag()
    await named_users([(f"{t}{i}", "A") for i in range(3)] + [(f"{u}{i}", "B") for i in range(3)])
    page = await search(gql, t, first=1)
    other = await search(gql, u, first=5, after=page["pageInfo"]["endCursor"])
    assert all(n.startswith(u) for n in names(other))
