"""``last``/``before`` on the keyset connections backed by SQL (docs/api/clients.md
"Paging"): a backward walk gives the same entries as the forward walk, each page in the
list's order, with ``hasPreviousPage`` exact; arguments that mix both ways, sizes past
the limit and cursors of another list are BAD_USER_INPUT."""

from __future__ import annotations

import pytest

from tests.support.actions import post
from tests.support.documents import FOLLOW

LISTS = {
    "followers": "followers",
    "following": "following",
    "posts": "posts",
}
PAGE = """query($u: String!, $f: Int, $a: String, $l: Int, $b: String) { user(username: $u) {
  %s(first: $f, after: $a, last: $l, before: $b) { edges { cursor }
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } }"""


async def walk_forward(gql, name, user, token, size) -> list[str]:
    cursors, after = [], None
    while True:
        variables = {"u": user.username, "f": size, "a": after}
        out = await gql(PAGE % name, variables, token=token)
        assert "errors" not in out, out
        page = out["data"]["user"][name]
        cursors += [e["cursor"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return cursors
        after = page["pageInfo"]["endCursor"]


async def walk_backward(gql, name, user, token, size) -> list[str]:
    pages, before = [], None
    while True:
        variables = {"u": user.username, "l": size, "b": before}
        out = await gql(PAGE % name, variables, token=token)
        assert "errors" not in out, out
        page = out["data"]["user"][name]
        cursors = [e["cursor"] for e in page["edges"]]
        assert len(cursors) <= size
        info = page["pageInfo"]
        assert info["hasNextPage"] is (before is not None)
        assert (info["startCursor"], info["endCursor"]) == (
            (cursors[0], cursors[-1]) if cursors else (None, None)
        )
        pages.insert(0, cursors)
        if not info["hasPreviousPage"]:
            return [c for p in pages for c in p]
        before = info["startCursor"]


@pytest.fixture
async def lists(gql, make_users):
    owner, *others = await make_users(6, prefix="bw")
    for other in others:
        assert "errors" not in await gql(FOLLOW, {"id": owner.gid}, token=other.token)
        assert "errors" not in await gql(FOLLOW, {"id": other.gid}, token=owner.token)
    for i in range(5):
        await post(gql, owner, f"post {i}")
    return owner, others


@pytest.mark.parametrize("name", sorted(LISTS))
async def test_backward_walks_meet_the_forward_walk_exactly(gql, lists, name):
    owner, others = lists
    token = others[0].token
    forward = await walk_forward(gql, name, owner, token, 2)
    assert len(forward) == 5
    for size in (1, 2, 3, 5, 7):
        assert await walk_backward(gql, name, owner, token, size) == forward, size
    # from the middle: the entries just before a cursor, and exactly whether more exist
    out = await gql(PAGE % name, {"u": owner.username, "l": 2, "b": forward[3]}, token=token)
    page = out["data"]["user"][name]
    assert [e["cursor"] for e in page["edges"]] == forward[1:3]
    assert page["pageInfo"]["hasPreviousPage"] is True
    out = await gql(PAGE % name, {"u": owner.username, "l": 2, "b": forward[2]}, token=token)
    page = out["data"]["user"][name]
    assert [e["cursor"] for e in page["edges"]] == forward[0:2]
    assert page["pageInfo"]["hasPreviousPage"] is False
    # `before` alone: as many as `first`
    out = await gql(PAGE % name, {"u": owner.username, "f": 1, "b": forward[4]}, token=token)
    assert [e["cursor"] for e in out["data"]["user"][name]["edges"]] == [forward[3]]


@pytest.mark.parametrize("name", sorted(LISTS))
async def test_bad_backward_arguments_are_bad_user_input(gql, lists, settings, name):
    owner, others = lists
    token = others[0].token
    (cursor, *_) = await walk_forward(gql, name, owner, token, 5)
    other_list = "following" if name != "following" else "followers"
    (foreign, *_) = await walk_forward(gql, other_list, owner, token, 5)
    for variables in (
        {"a": cursor, "b": cursor},
        {"a": cursor, "l": 2},
        {"l": settings.max_page_size + 1},
        {"l": -1},
        {"b": foreign},
        {"b": "not a cursor"},
    ):
        out = await gql(PAGE % name, {"u": owner.username} | variables, token=token)
        codes = [e["extensions"]["code"] for e in out.get("errors") or ()]
        assert codes == ["BAD_USER_INPUT"], (variables, out)
