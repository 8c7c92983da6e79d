"""A list the viewer may not read (a private account's or a blocked one's posts,
followers, following) comes back closed, never as an empty page a paging helper would
fetch again (docs/api/clients.md "Paging"): no edges, ``hasNextPage: false`` and
``restricted`` saying why; over HTTP and WebSocket alike."""

from __future__ import annotations

from sqlalchemy import text

from tests.support.documents import BLOCK
from tests.support.subscriptions import served
from tests.support.ws import TRANSPORT_WS, WSClient

LISTS = """query($u: String!) { user(username: $u) {
  posts(first: 5) { edges { cursor } pageInfo { hasNextPage hasPreviousPage endCursor }
    restricted }
  followers(first: 5) { totalCount edges { cursor } pageInfo { hasNextPage } restricted }
  following(first: 5) { totalCount edges { cursor } pageInfo { hasNextPage } restricted } } }"""


def closed(user: dict, why: str) -> bool:
    return all(
        user[name]["edges"] == []
        and user[name]["pageInfo"]["hasNextPage"] is False
        and user[name]["restricted"] == why
        for name in ("posts", "followers", "following")
    )


async def test_closed_lists_say_why_over_http_and_websocket(gql, engine, make_users, settings):
    owner, stranger, blocker = await make_users(3, prefix="cl")
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE users SET is_private = true WHERE id = :o"), {"o": owner.id}
        )
    assert "errors" not in await gql(BLOCK, {"id": stranger.gid}, token=blocker.token)

    mine = (await gql(LISTS, {"u": owner.username}, token=owner.token))["data"]["user"]
    assert all(mine[n]["restricted"] is None for n in ("posts", "followers", "following"))
    for token in (stranger.token, None):
        seen = (await gql(LISTS, {"u": owner.username}, token=token))["data"]["user"]
        assert closed(seen, "PRIVATE_ACCOUNT"), seen
        assert seen["posts"]["pageInfo"] == {
            "hasNextPage": False,
            "hasPreviousPage": False,
            "endCursor": None,
        }
    seen = (await gql(LISTS, {"u": blocker.username}, token=stranger.token))["data"]["user"]
    assert closed(seen, "BLOCKED"), seen

    async with served(settings, engine) as url:
        client = await WSClient.open(url, TRANSPORT_WS, stranger.token)
        try:
            await client.subscribe(LISTS, {"u": owner.username})
            got = await client.next()
            assert "errors" not in got and closed(got["data"]["user"], "PRIVATE_ACCOUNT"), got
        finally:
            await client.close()
