"""GraphQL actions tests share: post, follow, read a feed, answer a union."""

from __future__ import annotations

import asyncio
import uuid

from tests.support.documents import (
    COUNTS,
    CREATE,
    FEED,
    FOLLOW,
    REGISTER,
    SET_PRIVATE,
)


async def counts(gql, user) -> tuple[int, int]:
    u = (await gql(COUNTS, {"u": user.username}))["data"]["user"]
    return u["followerCount"], u["followingCount"]


async def make_private(gql, user) -> None:
    out = await ok(gql, SET_PRIVATE, {"p": True}, user, "UpdateProfileSuccess")
    assert out["user"]["isPrivate"] is True


async def ok(gql, query: str, variables: dict, actor, typename: str) -> dict:
    out = await gql(query, variables, token=actor.token)
    assert "errors" not in out, out
    result = next(iter(out["data"].values()))
    assert result["__typename"] == typename, result
    return result


async def register(gql, access: str, token: str, platform: str = "ANDROID") -> dict:
    out = await gql(REGISTER, {"p": platform, "t": token}, token=access)
    assert "errors" not in out, out
    return out["data"]["registerDevice"]


def fcm_token() -> str:
    return f"fcm:{uuid.uuid4().hex}{uuid.uuid4().hex}"


async def follow_all(gql, fans, star) -> None:
    await asyncio.gather(*(gql(FOLLOW, {"id": star.gid}, token=f.token) for f in fans))


async def walk_feed(gql, user, first: int) -> list[str]:
    seen, after = [], None
    while True:
        out = await gql(FEED, {"first": first, "after": after}, token=user.token)
        assert "errors" not in out, out
        feed = out["data"]["viewer"]["feed"]
        seen += [e["node"]["caption"] for e in feed["edges"]]
        if not feed["pageInfo"]["hasNextPage"]:
            return seen
        after = feed["pageInfo"]["endCursor"]


async def feed_captions(gql, user, first: int = 50) -> list[str]:
    out = await gql(FEED, {"first": first}, token=user.token)
    assert "errors" not in out, out
    return [e["node"]["caption"] for e in out["data"]["viewer"]["feed"]["edges"]]


async def post(gql, author, caption: str) -> str:
    out = (await gql(CREATE, {"c": caption}, token=author.token))["data"]["createPost"]
    assert out["__typename"] == "CreatePostSuccess", out
    return out["post"]["id"]
