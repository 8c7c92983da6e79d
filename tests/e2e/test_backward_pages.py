"""``last``/``before`` on the keyset connections backed by SQL (docs/api/clients.md
"Paging"): a backward walk gives the same entries as the forward walk, each page in the
list's order, with ``hasPreviousPage`` exact; arguments that mix both ways, sizes past
the limit and cursors of another list are BAD_USER_INPUT."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from tests.support.actions import post
from tests.support.documents import BLOCK, COMMENT, FOLLOW, LIKE
from tests.support.reports import reports_dismissed_after

MUTE = "mutation($id: ID!) { mute(input: { userId: $id }) { __typename } }"
EDIT = """mutation($id: ID!, $c: String!) { editPost(input: { postId: $id, caption: $c }) {
  __typename } }"""

ARGS = "first: $f, after: $a, last: $l, before: $b"
SELECTION = """{ edges { cursor }
  pageInfo { hasNextPage hasPreviousPage startCursor endCursor } }"""
VARS = "$f: Int, $a: String, $l: Int, $b: String"


def declared(root: str) -> str:
    """The operation of ``root`` with the variables it uses."""
    pairs = (("$u", "$u: String!, "), ("$p", "$p: ID!, "), ("$t", "$t: String!, "))
    pairs += (("$c", "$c: ID!, "),)
    keys = [d for k, d in pairs if k in root]
    return f"query({''.join(keys)}{VARS}) {{ {root} }}"


LISTS = {
    name: declared(root)
    for name, root in {
        "followers": f"user(username: $u) {{ followers({ARGS}) {SELECTION} }}",
        "following": f"user(username: $u) {{ following({ARGS}) {SELECTION} }}",
        "posts": f"user(username: $u) {{ posts({ARGS}) {SELECTION} }}",
        "notifications": f"viewer {{ id notifications({ARGS}) {SELECTION} }}",
        "likes": f"node(id: $p) {{ ... on Post {{ likes({ARGS}) {SELECTION} }} }}",
        "comments": f"node(id: $p) {{ ... on Post {{ comments({ARGS}) {SELECTION} }} }}",
        "replies": f"node(id: $c) {{ ... on Comment {{ replies({ARGS}) {SELECTION} }} }}",
        "editHistory": f"node(id: $p) {{ ... on Post {{ editHistory({ARGS}) {SELECTION} }} }}",
        "hashtag": f"hashtag(name: $t) {{ posts({ARGS}) {SELECTION} }}",
        "blockedUsers": f"viewer {{ id blockedUsers({ARGS}) {SELECTION} }}",
        "mutedUsers": f"viewer {{ id mutedUsers({ARGS}) {SELECTION} }}",
        "followRequests": f"viewer {{ id followRequests({ARGS}) {SELECTION} }}",
    }.items()
}
#: Another list whose cursor each list refuses.
FOREIGN = {"followers": "following", "following": "followers", "posts": "likes"}
FOREIGN |= {"notifications": "posts", "likes": "comments", "comments": "likes"}
FOREIGN |= {"hashtag": "posts", "blockedUsers": "mutedUsers", "mutedUsers": "blockedUsers"}
FOREIGN |= {"followRequests": "followers", "replies": "comments", "editHistory": "likes"}
#: The lists the owner reads (the others are read by a follower).
OWN = {"notifications", "blockedUsers", "mutedUsers", "followRequests"}


def the_connection(data: dict) -> dict:
    node = data
    while "edges" not in node:
        (node,) = [v for v in node.values() if isinstance(v, dict)]
    return node


async def fetch(gql, name, lists, **variables) -> dict:
    owner, others, pid, tag, gate, comment = lists
    token = owner.token if name in OWN else others[0].token
    if name == "followRequests":
        token = gate.token
    keys = {"u": owner.username, "p": pid, "t": tag, "c": comment}
    keys = {k: v for k, v in keys.items() if f"${k}" in LISTS[name]}
    out = await gql(LISTS[name], keys | variables, token=token)
    return out


async def walk_forward(gql, name, lists, size) -> list[str]:
    cursors, after = [], None
    while True:
        out = await fetch(gql, name, lists, f=size, a=after)
        assert "errors" not in out, out
        page = the_connection(out["data"])
        cursors += [e["cursor"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            return cursors
        after = page["pageInfo"]["endCursor"]


async def walk_backward(gql, name, lists, size) -> list[str]:
    pages, before = [], None
    while True:
        out = await fetch(gql, name, lists, l=size, b=before)
        assert "errors" not in out, out
        page = the_connection(out["data"])
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
async def lists(gql, engine, make_users, worker):
    owner, *others = await make_users(6, prefix="bw")
    blocked, muted, asking = [await make_users(5, prefix=p) for p in ("bb", "bm", "br")]
    tag = f"t{uuid.uuid4().hex[:10]}"
    for other in others:
        assert "errors" not in await gql(FOLLOW, {"id": owner.gid}, token=other.token)
        assert "errors" not in await gql(FOLLOW, {"id": other.gid}, token=owner.token)
    for user in blocked:
        assert "errors" not in await gql(BLOCK, {"id": user.gid}, token=owner.token)
    for user in muted:
        assert "errors" not in await gql(MUTE, {"id": user.gid}, token=owner.token)
    # the follow requests go to a private account of their own (the owner stays public:
    # its engaged posts are no private candidates in other tests' explore pages)
    (gate,) = await make_users(1, prefix="bg")
    async with engine.begin() as conn:
        private = text("UPDATE users SET is_private = true WHERE id = :o")
        await conn.execute(private, {"o": gate.id})
    for user in asking:
        assert "errors" not in await gql(FOLLOW, {"id": gate.gid}, token=user.token)
    pids = [await post(gql, owner, f"post {i} #{tag}") for i in range(5)]
    comments = []
    for other in others:
        assert "errors" not in await gql(LIKE, {"id": pids[0]}, token=other.token)
        out = await gql(COMMENT, {"id": pids[0], "body": "hi"}, token=other.token)
        assert "errors" not in out, out
        comments.append(out["data"]["addComment"]["comment"]["id"])
    for other in others:
        reply = {"id": pids[0], "body": "re", "parent": comments[0]}
        out = await gql(COMMENT, reply, token=other.token)
        assert out["data"]["addComment"]["__typename"] == "AddCommentSuccess", out
    for i in range(5):
        out = await gql(EDIT, {"id": pids[0], "c": f"post 0 #{tag} v{i}"}, token=owner.token)
        assert out["data"]["editPost"]["__typename"] == "EditPostSuccess", out
    await worker.drain()
    return owner, others, pids[0], tag, gate, comments[0]


@pytest.mark.parametrize("name", sorted(LISTS))
async def test_backward_walks_meet_the_forward_walk_exactly(gql, lists, name):
    forward = await walk_forward(gql, name, lists, 2)
    assert len(forward) >= 5, forward
    assert len(set(forward)) == len(forward)
    for size in (1, 2, 3, 7):
        assert await walk_backward(gql, name, lists, size) == forward, size
    # from the middle: the entries just before a cursor, and exactly whether more exist
    page = the_connection((await fetch(gql, name, lists, l=2, b=forward[3]))["data"])
    assert [e["cursor"] for e in page["edges"]] == forward[1:3]
    assert page["pageInfo"]["hasPreviousPage"] is True
    page = the_connection((await fetch(gql, name, lists, l=2, b=forward[2]))["data"])
    assert [e["cursor"] for e in page["edges"]] == forward[0:2]
    assert page["pageInfo"]["hasPreviousPage"] is False
    # `before` alone: as many as `first`
    page = the_connection((await fetch(gql, name, lists, f=1, b=forward[4]))["data"])
    assert [e["cursor"] for e in page["edges"]] == [forward[3]]


@pytest.mark.parametrize("name", sorted(LISTS))
async def test_bad_backward_arguments_are_bad_user_input(gql, lists, settings, name):
    (cursor, *_) = await walk_forward(gql, name, lists, 5)
    (foreign, *_) = await walk_forward(gql, FOREIGN[name], lists, 5)
    for variables in (
        {"a": cursor, "b": cursor},
        {"a": cursor, "l": 2},
        {"l": settings.max_page_size + 1},
        {"l": -1},
        {"b": foreign},
        {"b": "not a cursor"},
    ):
        out = await fetch(gql, name, lists, **variables)
        codes = [e["extensions"]["code"] for e in out.get("errors") or ()]
        assert codes == ["BAD_USER_INPUT"], (variables, out)


async def test_a_ranked_order_pages_forward_only(gql, lists):
    _, others, _, tag, _, _ = lists
    query = "query($t: String!) { hashtag(name: $t) { posts(order: RANKED, last: 2) { %s } } }"
    out = await gql(query % "edges { cursor }", {"t": tag}, token=others[0].token)
    assert [e["extensions"]["code"] for e in out["errors"]] == ["BAD_USER_INPUT"], out


@pytest.fixture
async def closing_reports(engine):
    """The reports these tests file leave the shared queue when they end."""
    async with reports_dismissed_after(engine):
        yield


QUEUE = """query($s: ReportStatus, $f: Int, $a: String, $l: Int, $b: String) { moderation {
  ... on Moderation { reports(status: $s, first: $f, after: $a, last: $l, before: $b)
  { edges { cursor } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } } } }"""


async def test_the_report_queue_pages_backward_exactly(gql, make_users, settings, closing_reports):
    from app.cli.admin import _set_role

    mod, *reporters = await make_users(6, prefix="bq")
    assert await _set_role(settings, settings.database_url, mod.username, True) == 0
    report = "mutation($id: ID!) { reportUser(input: { id: $id, reason: SPAM }) { __typename } }"
    for r in reporters:
        assert "errors" not in await gql(report, {"id": mod.gid}, token=r.token)

    async def page(**variables) -> dict:
        out = await gql(QUEUE, {"s": "OPEN"} | variables, token=mod.token)
        assert "errors" not in out, out
        return out["data"]["moderation"]["reports"]

    forward, after = [], None
    while True:
        p = await page(f=2, a=after)
        forward += [e["cursor"] for e in p["edges"]]
        if not p["pageInfo"]["hasNextPage"]:
            break
        after = p["pageInfo"]["endCursor"]
    assert len(forward) >= 5
    backward, before = [], None
    while True:
        p = await page(l=2, b=before)
        backward = [e["cursor"] for e in p["edges"]] + backward
        if not p["pageInfo"]["hasPreviousPage"]:
            break
        before = p["pageInfo"]["startCursor"]
    assert backward == forward


#: The connections that page forward only: ranked snapshots (docs/api/clients.md
#: "Paging"); a hashtag's RANKED order too, by its argument (above).
FORWARD_ONLY = {"Query.explore", "Query.searchUsers", "User.suggestedFollows"}
FIELDS = """{ __schema { types { name fields { name args { name }
  type { name kind ofType { name } } } } } }"""


async def test_every_other_connection_takes_last_and_before(gql):
    schema = (await gql(FIELDS))["data"]["__schema"]
    found = {}
    for t in schema["types"]:
        for f in t["fields"] or ():
            named = f["type"]["name"] or (f["type"]["ofType"] or {}).get("name") or ""
            if named.endswith("Connection"):
                found[f"{t['name']}.{f['name']}"] = {a["name"] for a in f["args"]}
    assert len(found) >= 17, found
    assert "User.feed" in found and "Comment.replies" in found and "Post.editHistory" in found
    for field, args in found.items():
        backward = {"last", "before"} <= args
        assert backward is (field not in FORWARD_ONLY), (field, args)
