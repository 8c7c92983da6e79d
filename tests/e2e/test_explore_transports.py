"""Explore's auth over HTTP GET as over POST (the one executor; WebSocket sockets run
subscriptions only and refuse anonymous connection_init): anonymous is
UNAUTHENTICATED, a viewer gets the page."""

from __future__ import annotations

EXPLORE = "query { explore(first: 2) { edges { cursor } pageInfo { hasNextPage } } }"
TRENDING = "query { trendingHashtags(first: 2) { name } }"


async def test_explore_over_http_get_needs_a_viewer(client, make_users):
    (user,) = await make_users(1, prefix="exget")
    for document in (EXPLORE, TRENDING):
        out = (await client.get("/graphql", params={"query": document})).json()
        assert out["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED", out
        headers = {"Authorization": f"Bearer {user.token}"}
        out = (await client.get("/graphql", params={"query": document}, headers=headers)).json()
        assert "errors" not in out, out
