"""``feedEdgeAdded``: the posts of ``feedItemAdded`` as edges of ``viewer.feed``, each with
the cursor the feed gives it, so a client prepends them to the connection it holds
(docs/api/subscriptions.md); on both protocols (``feedItemAdded`` stays as it was:
tests/e2e/test_subscriptions.py)."""

from __future__ import annotations

import pytest
from redis.asyncio import Redis

from domain.realtime import user_channel
from tests.support.actions import post
from tests.support.documents import FOLLOW
from tests.support.subscriptions import PROTOCOLS, live, served
from tests.support.ws import WSClient

EDGES = "subscription { feedEdgeAdded { cursor node { id caption author { username } } } }"
FEED = """query($a: String) { viewer { feed(first: 5, after: $a) {
  edges { cursor node { id } } } } }"""


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_feed_edges_carry_the_cursor_the_feed_gives(
    gql, engine, make_users, settings, worker, protocol
):
    author, follower = await make_users(2, prefix="fe")
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=follower.token)
    older = await post(gql, author, "older")
    await worker.drain()
    redis = Redis.from_url(settings.redis_url)
    try:
        async with served(settings, engine) as url:
            client = await WSClient.open(url, protocol, follower.token)
            try:
                await client.subscribe(EDGES)
                await live(redis, user_channel(follower.id), online=follower.id)
                gid = await post(gql, author, "fresh")
                await worker.drain()
                edge = (await client.next())["data"]["feedEdgeAdded"]
            finally:
                await client.close()
    finally:
        await redis.aclose()
    assert edge["node"] == {"id": gid, "caption": "fresh", "author": {"username": author.username}}
    feed = (await gql(FEED, token=follower.token))["data"]["viewer"]["feed"]["edges"]
    assert feed[0] == {"cursor": edge["cursor"], "node": {"id": gid}}
    after = (await gql(FEED, {"a": edge["cursor"]}, token=follower.token))["data"]
    assert [e["node"]["id"] for e in after["viewer"]["feed"]["edges"]] == [older]
