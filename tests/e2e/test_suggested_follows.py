"""Suggested follows over GraphQL (docs/api/suggested-follows.md "Suggested follows"):
friends of friends ranked by how many of the viewer's followees follow them, who is left
out, the bounded sample, stable paging, and that only the viewer may read them."""

from __future__ import annotations

from domain.moderation.set_user_status import set_user_status
from domain.search.suggested_follows import suggested_follows
from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from domain.social.mute_user import mute_user
from domain.social.unmute_user import unmute_user
from tests.support.actions import make_private, ok
from tests.support.documents import FOLLOW_OR_REQUEST

SUGGESTED = """query($first: Int, $after: String) { viewer { suggestedFollows(first: $first,
  after: $after) { edges { cursor followedByFolloweesCount node { id username } }
  pageInfo { hasNextPage endCursor } } } }"""


async def suggestions(gql, viewer, *, first: int = 20, after=None) -> dict:
    out = await gql(SUGGESTED, {"first": first, "after": after}, token=viewer.token)
    assert "errors" not in out, out
    return out["data"]["viewer"]["suggestedFollows"]


async def test_friends_of_friends_ranked_with_everyone_left_out_who_should_be(
    gql, engine, settings, make_users
):
    shards = settings.counter_shards
    viewer, a, b, c = await make_users(4, prefix="sv")
    x, y, z, blocked, blocker, banned, private = await make_users(7, prefix="sc")

    async def follow(u, v):
        assert (await follow_user(engine, u.id, v.id, counter_shards=shards)).created

    for followee in (a, b, c):
        await follow(viewer, followee)
    for target in (x, y, z, blocked, banned, private, viewer):
        await follow(a, target)
    for target in (x, y, blocker, a):  # a: already followed by the viewer
        await follow(b, target)
    await follow(c, x)
    await block_user(engine, viewer.id, blocked.id, counter_shards=shards)
    await block_user(engine, blocker.id, viewer.id, counter_shards=shards)
    await set_user_status(engine, banned.id, "banned", counter_shards=shards)
    await make_private(gql, private)
    requested = await ok(
        gql, FOLLOW_OR_REQUEST, {"id": private.gid}, viewer, "FollowRequestedSuccess"
    )
    assert requested["user"]["followRequestedByViewer"] is True

    got = await suggestions(gql, viewer)
    assert [(e["node"]["username"], e["followedByFolloweesCount"]) for e in got["edges"]] == [
        (x.username, 3),
        (y.username, 2),
        (z.username, 1),
    ]
    assert got["pageInfo"]["hasNextPage"] is False

    # Following a suggestion removes it from the next list.
    await follow(viewer, x)
    assert [e["node"]["username"] for e in (await suggestions(gql, viewer))["edges"]] == [
        y.username,
        z.username,
    ]


async def test_the_sample_bounds_the_cost(engine, settings, make_users):
    shards = settings.counter_shards
    viewer, old, recent1, recent2 = await make_users(4, prefix="sb")
    p, q, r = await make_users(3, prefix="sp")

    async def follow(u, v):
        assert (await follow_user(engine, u.id, v.id, counter_shards=shards)).created

    await follow(viewer, old)  # the oldest follow: outside a sample of 2
    await follow(viewer, recent1)
    await follow(viewer, recent2)
    await follow(old, p)
    await follow(recent1, q)  # recent1's older follow: outside 1 per followee
    await follow(recent1, r)
    await follow(recent2, r)

    full = await suggested_follows(engine, viewer.id, limit=10)
    assert {e.user_id: e.score for e in full} == {p.id: 1, q.id: 1, r.id: 2}
    bounded = await suggested_follows(engine, viewer.id, limit=10, followees=2, per_followee=1)
    assert [(e.user_id, e.score) for e in bounded] == [(r.id, 2)]


async def test_pages_are_stable_and_only_the_viewer_reads_them(gql, engine, settings, make_users):
    shards = settings.counter_shards
    viewer, hub = await make_users(2, prefix="sg")
    others = await make_users(13, prefix="so")
    assert (await follow_user(engine, viewer.id, hub.id, counter_shards=shards)).created
    for other in others:
        assert (await follow_user(engine, hub.id, other.id, counter_shards=shards)).created

    seen, after = [], None
    while True:
        page = await suggestions(gql, viewer, first=5, after=after)
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
        # A new follow of the hub between pages does not shift the frozen list.
        (late,) = await make_users(1, prefix="sl")
        assert (await follow_user(engine, hub.id, late.id, counter_shards=shards)).created
    assert sorted(seen) == sorted(o.gid for o in others)

    out = await gql(
        """query($u: String!) { user(username: $u) { suggestedFollows { edges { cursor } } } }""",
        {"u": viewer.username},
        token=hub.token,
    )
    assert out["errors"][0]["extensions"]["code"] == "FORBIDDEN"


SEARCH = """query($q: String!, $after: String) { searchUsers(query: $q, first: 1,
  after: $after) { edges { cursor } pageInfo { endCursor } } }"""


async def test_search_and_suggestion_cursors_are_not_each_others(gql, engine, settings, make_users):
    """Both lists page a frozen ranking, but not the same one: a cursor of one is
    BAD_USER_INPUT in the other (it once paged on silently, or ended the list)."""
    viewer, a, x, y = await make_users(4, prefix="sx")
    for u, v in ((viewer, a), (a, x), (a, y)):
        assert (
            await follow_user(engine, u.id, v.id, counter_shards=settings.counter_shards)
        ).created
    suggested = (await suggestions(gql, viewer, first=1))["pageInfo"]["endCursor"]
    found = await gql(SEARCH, {"q": "sx"}, token=viewer.token)
    searched = found["data"]["searchUsers"]["pageInfo"]["endCursor"]
    assert suggested and searched
    crossed = [
        await gql(SEARCH, {"q": "sx", "after": suggested}, token=viewer.token),
        await gql(SUGGESTED, {"first": 1, "after": searched}, token=viewer.token),
    ]
    for out in crossed:
        assert out["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT", out
    # Each list's own cursor still pages on.
    assert "errors" not in await gql(SEARCH, {"q": "sx", "after": searched}, token=viewer.token)
    assert (await suggestions(gql, viewer, first=1, after=suggested))["edges"]


async def test_muted_accounts_are_never_suggested(gql, engine, settings, make_users):
    """A muted account followed by three of the viewer's followees (it would rank first)
    is left out; unmuted, it is suggested again."""
    shards = settings.counter_shards
    viewer, a, b, c = await make_users(4, prefix="smv")
    loud, quiet = await make_users(2, prefix="smc")
    for followee in (a, b, c):
        assert (await follow_user(engine, viewer.id, followee.id, counter_shards=shards)).created
        assert (await follow_user(engine, followee.id, loud.id, counter_shards=shards)).created
    assert (await follow_user(engine, a.id, quiet.id, counter_shards=shards)).created
    assert [e["node"]["username"] for e in (await suggestions(gql, viewer))["edges"]] == [
        loud.username,
        quiet.username,
    ]
    await mute_user(engine, viewer.id, loud.id, counter_shards=shards)
    assert [e["node"]["username"] for e in (await suggestions(gql, viewer))["edges"]] == [
        quiet.username
    ]
    await unmute_user(engine, viewer.id, loud.id)
    assert [e["node"]["username"] for e in (await suggestions(gql, viewer))["edges"]] == [
        loud.username,
        quiet.username,
    ]
