"""A keyset cursor works in the list that issued it only: passed as ``after`` to any
other keyset connection (another kind of list, or the same kind of another owner) it is
BAD_USER_INPUT, and in its own list it pages on (docs/api/errors.md "Errors": "a cursor of another
list")."""

from __future__ import annotations

import uuid

from tests.support.actions import post
from tests.support.documents import COMMENT, FOLLOW, LIKE
from tests.support.lists import LISTS, connection

PAGE = "first: 1, after: $a"
SELECTION = "{ edges { cursor } pageInfo { endCursor hasNextPage } }"


async def test_a_cursor_of_another_list_is_bad_user_input(gql, make_users, worker):
    author, fan, other = await make_users(3)
    tag = f"t{uuid.uuid4().hex[:10]}"
    for target in (author, other):
        out = await gql(FOLLOW, {"id": target.gid}, token=fan.token)
        assert "errors" not in out, out
    out = await gql(FOLLOW, {"id": author.gid}, token=other.token)
    assert "errors" not in out, out
    posts = [await post(gql, author, f"#{tag} number {i}") for i in range(2)]
    for i in range(2):
        await post(gql, other, f"another author's post {i}")
    for p in posts:
        for u in (fan, other):
            assert "errors" not in await gql(LIKE, {"id": p}, token=u.token)
            assert "errors" not in await gql(COMMENT, {"id": posts[0], "body": "hi"}, token=u.token)
    await worker.drain()

    values = {"u": author.username, "w": other.username, "f": fan.username, "p": posts[0]}
    values["t"] = tag
    # the list's reader: the author reads its notifications, the fan its feed
    readers = {"notifications": author, "feed": fan}

    async def page(name: str, after: str | None) -> dict:
        query, key = LISTS[name]
        var = "u" if key in ("w", "f") else key  # user lists take $u
        variables = {"a": after} | ({var: values[key]} if key else {})
        token = readers.get(name, fan).token
        return await gql(query % (PAGE, SELECTION), variables, token=token)

    cursors = {}
    for name in LISTS:
        out = await page(name, None)
        assert "errors" not in out, (name, out)
        conn = connection(out["data"])
        assert conn["pageInfo"]["hasNextPage"], (name, conn)
        cursors[name] = conn["pageInfo"]["endCursor"]

    for name in LISTS:
        # its own cursor pages on
        own = await page(name, cursors[name])
        assert "errors" not in own, (name, own)
        assert connection(own["data"])["edges"][0]["cursor"] != cursors[name], name
        for other_name, cursor in cursors.items():
            if other_name == name:
                continue
            out = await page(name, cursor)
            codes = [e["extensions"]["code"] for e in out.get("errors") or ()]
            assert codes == ["BAD_USER_INPUT"], (name, other_name, out)
            assert "another list" in out["errors"][0]["message"], out
