"""Mutations between the viewer and another account answer with both (docs/api/README.md
"Overview"): ``user`` and ``viewer``, each read after the change, so a
normalised cache refreshes the viewer's counts too; over HTTP and WebSocket alike."""

from __future__ import annotations

from sqlalchemy import text

from tests.support.subscriptions import served
from tests.support.ws import TRANSPORT_WS, WSClient

SIDES = """user { id followerCount followingCount followedByViewer mutedByViewer
  blockedWithViewer } viewer { id followerCount followingCount
  mutedUsers { edges { node { id } } } }"""
SUCCESSES = (
    "FollowSuccess FollowRequestedSuccess UnfollowSuccess BlockSuccess UnblockSuccess "
    "ApproveFollowRequestSuccess RejectFollowRequestSuccess MuteSuccess UnmuteSuccess"
).split()


def mutation(name: str) -> str:
    spreads = " ".join(f"... on {s} {{ {SIDES} }}" for s in SUCCESSES if _of(name, s))
    return f"""mutation($id: ID!) {{ {name}(input: {{ userId: $id }}) {{ __typename
      {spreads} ... on Error {{ code }} }} }}"""


def _of(name: str, success: str) -> bool:
    first = success.removesuffix("Success")
    return first.lower().startswith(name.lower()) and (
        name != "follow" or success in ("FollowSuccess", "FollowRequestedSuccess")
    )


async def run(gql, name: str, target, me) -> dict:
    out = await gql(mutation(name), {"id": target.gid}, token=me.token)
    assert "errors" not in out, out
    payload = out["data"][name]
    assert payload["__typename"].endswith("Success"), payload
    assert payload["user"]["id"] == target.gid and payload["viewer"]["id"] == me.gid
    return payload


def counts(side: dict) -> tuple[int, int]:
    return side["followerCount"], side["followingCount"]


async def test_two_account_payloads_carry_the_viewer_after_the_change(gql, engine, make_users):
    me, star, fan = await make_users(3, prefix="ts")
    out = await run(gql, "follow", star, me)
    assert counts(out["viewer"]) == (0, 1) and counts(out["user"]) == (1, 0)
    assert out["user"]["followedByViewer"] is True
    out = await run(gql, "unfollow", star, me)
    assert counts(out["viewer"]) == (0, 0) and counts(out["user"]) == (0, 0)

    await run(gql, "follow", star, me)
    await run(gql, "follow", me, star)
    out = await run(gql, "block", star, me)
    assert counts(out["viewer"]) == (0, 0) and out["user"]["blockedWithViewer"] is True
    out = await run(gql, "unblock", star, me)
    assert out["user"]["blockedWithViewer"] is False and counts(out["viewer"]) == (0, 0)

    out = await run(gql, "mute", star, me)
    assert out["viewer"]["mutedUsers"]["edges"] == [{"node": {"id": star.gid}}]
    out = await run(gql, "unmute", star, me)
    assert out["viewer"]["mutedUsers"]["edges"] == []

    async with engine.begin() as conn:
        await conn.execute(text("UPDATE users SET is_private = true WHERE id = :m"), {"m": me.id})
    out = await run(gql, "follow", me, fan)
    assert out["__typename"] == "FollowRequestedSuccess" and counts(out["viewer"]) == (0, 0)
    out = await run(gql, "approveFollowRequest", fan, me)
    assert counts(out["viewer"]) == (1, 0) and counts(out["user"]) == (0, 1)
    await run(gql, "follow", me, star)
    out = await run(gql, "rejectFollowRequest", star, me)
    assert counts(out["viewer"]) == (1, 0) and counts(out["user"]) == (0, 0)


async def test_the_viewer_side_arrives_over_websocket(engine, make_users, settings):
    me, star = await make_users(2, prefix="tw")
    async with served(settings, engine) as url:
        client = await WSClient.open(url, TRANSPORT_WS, me.token)
        try:
            await client.subscribe(mutation("follow"), {"id": star.gid})
            got = await client.next()
            assert "errors" not in got, got
            payload = got["data"]["follow"]
            assert payload["viewer"]["id"] == me.gid and counts(payload["viewer"]) == (0, 1)
            assert counts(payload["user"]) == (1, 0)
        finally:
            await client.close()
