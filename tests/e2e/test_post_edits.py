"""Editing a post's caption over GraphQL: the author only, within POST_EDIT_WINDOW_S, the
edit history for whoever sees the post, hashtags and mentions following the caption, the
post's place in feeds unchanged."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools

from sqlalchemy import text

from schema.ids import decode_global_id
from tests.support.actions import feed_captions, follow_all, make_private, post
from tests.support.checks import measured, no_unread_drift, notifications, summary
from tests.support.documents import BLOCK

EDIT = """mutation($id: ID!, $c: String!) { editPost(input: { postId: $id, caption: $c }) {
  __typename ... on EditPostSuccess { post { id caption editedAt createdAt } }
  ... on Error { code message } ... on ValidationError { field }
  ... on EditWindowClosedError { editableUntil } } }"""
POST = """query($id: ID!) { node(id: $id) { ... on Post { caption createdAt editedAt
  editHistory(first: 10) { edges { node { caption writtenAt replacedAt } }
    pageInfo { hasNextPage endCursor } } } } }"""
HISTORY_PAGE = """query($id: ID!, $after: String) { node(id: $id) { ... on Post {
  editHistory(first: 1, after: $after) { edges { node { caption } }
    pageInfo { hasNextPage endCursor } } } } }"""
HASHTAG = """query($n: String!) { hashtag(name: $n) { posts { edges { node { caption } } } } }"""
FEED_HISTORY = """query($n: Int!) { viewer { feed(first: $n) { edges { node { caption editedAt
  editHistory(first: 3) { edges { node { caption } } } } } } } }"""


FEED_PLAIN = """query($n: Int!) { viewer { feed(first: $n) { edges { node { caption editedAt
  } } } } }"""


def pid(gid: str):
    return decode_global_id(gid, "Post", "id")


async def edit(gql, user, gid: str, caption: str) -> dict:
    out = await gql(EDIT, {"id": gid, "c": caption}, token=user.token)
    assert "errors" not in out, out
    return out["data"]["editPost"]


async def revisions(engine, gid: str) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT count(*) FROM post_revisions WHERE post_id = :p"), {"p": pid(gid)}
        )


async def tagged(gql, name: str) -> list[str]:
    out = (await gql(HASHTAG, {"n": name}))["data"]["hashtag"]["posts"]["edges"]
    return [e["node"]["caption"] for e in out]


async def test_the_author_edits_and_everyone_who_sees_the_post_reads_the_history(
    gql, make_users, worker, engine
):
    author, fan, bob, carol = await make_users(4)
    await follow_all(gql, [fan], author)
    first = await post(gql, author, f"hello #old @{bob.username}")
    await post(gql, author, "a later post")
    await worker.drain()
    assert await feed_captions(gql, fan) == ["a later post", f"hello #old @{bob.username}"]

    new = f"hello #new @{bob.username} @{carol.username}"
    out = await edit(gql, author, first, new)
    assert out["__typename"] == "EditPostSuccess", out
    edited = out["post"]
    assert edited["caption"] == new and edited["editedAt"] > edited["createdAt"]
    await edit(gql, author, first, new + " !")

    seen = (await gql(POST, {"id": first}, token=fan.token))["data"]["node"]
    history = [e["node"] for e in seen["editHistory"]["edges"]]
    assert [h["caption"] for h in history] == [new, f"hello #old @{bob.username}"]
    assert history[1]["writtenAt"] == seen["createdAt"]  # the original caption
    assert history[0]["writtenAt"] == history[1]["replacedAt"] == edited["editedAt"]
    assert history[0]["replacedAt"] == seen["editedAt"]
    anonymous = (await gql(POST, {"id": first}))["data"]["node"]
    assert anonymous["editHistory"] == seen["editHistory"]
    page = (await gql(HISTORY_PAGE, {"id": first}))["data"]["node"]["editHistory"]
    assert page["pageInfo"]["hasNextPage"] is True
    after = page["pageInfo"]["endCursor"]
    page = (await gql(HISTORY_PAGE, {"id": first, "after": after}))["data"]["node"]
    assert page["editHistory"]["edges"] == [{"node": {"caption": f"hello #old @{bob.username}"}}]

    # the feed keeps the post where it was, with its new caption
    assert await feed_captions(gql, fan) == ["a later post", new + " !"]
    assert await tagged(gql, "old") == [] and await tagged(gql, "new") == [new + " !"]
    # bob was mentioned before: told once; carol, added by the edit: told once
    await worker.drain()
    for user in (bob, carol):
        assert summary(await notifications(gql, user)) == [("MENTION", author.username, 1)]
    await no_unread_drift(engine, bob, carol)


async def test_an_edit_by_someone_else_or_after_the_window_changes_nothing(gql, make_users, engine):
    author, other, stranger = await make_users(3)
    gid = await post(gql, author, "mine #mine")
    out = await edit(gql, other, gid, "hijacked")
    assert (out["__typename"], out["code"]) == ("NotPostAuthorError", "NOT_POST_AUTHOR")
    await gql(BLOCK, {"id": stranger.gid}, token=author.token)
    out = await edit(gql, stranger, gid, "hijacked")  # cannot see it: as if there were none
    assert (out["__typename"], out["code"]) == ("NotFoundError", "NOT_FOUND")
    for bad, field in (("x" * 2201, "caption"), ("nul\x00", "caption"), ("", "caption")):
        out = await edit(gql, author, gid, bad)
        assert (out["__typename"], out["field"]) == ("ValidationError", field), bad
    out = await gql(EDIT, {"id": "not-an-id", "c": "x"}, token=author.token)
    assert out["data"]["editPost"]["code"] == "VALIDATION_FAILED"

    # a day and a second later (the default window is a day): closed
    async with engine.begin() as conn:
        await conn.execute(
            text("UPDATE posts SET created_at = now() - interval '1 day 1 second' WHERE id = :p"),
            {"p": pid(gid)},
        )
    out = await edit(gql, author, gid, "too late")
    assert (out["__typename"], out["code"]) == ("EditWindowClosedError", "EDIT_WINDOW_CLOSED")
    node = (await gql(POST, {"id": gid}, token=author.token))["data"]["node"]
    until = dt.datetime.fromisoformat(out["editableUntil"])
    assert until == dt.datetime.fromisoformat(node["createdAt"]) + dt.timedelta(days=1)
    assert node["caption"] == "mine #mine" and node["editedAt"] is None
    assert node["editHistory"]["edges"] == []
    assert await revisions(engine, gid) == 0 and await tagged(gql, "mine") == ["mine #mine"]


async def test_the_same_caption_again_changes_nothing_and_deleted_posts_are_not_found(
    gql, make_users, engine
):
    (author,) = await make_users(1)
    gid = await post(gql, author, "same")
    out = await edit(gql, author, gid, "same")
    assert out["__typename"] == "EditPostSuccess" and out["post"]["editedAt"] is None
    assert await revisions(engine, gid) == 0
    await gql(
        "mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }",
        {"id": gid},
        token=author.token,
    )
    out = await edit(gql, author, gid, "after delete")
    assert out["code"] == "NOT_FOUND"


async def test_a_private_authors_history_is_for_followers_only(gql, make_users):
    author, outsider = await make_users(2)
    gid = await post(gql, author, "before")
    await edit(gql, author, gid, "after")
    await make_private(gql, author)
    assert (await gql(POST, {"id": gid}, token=outsider.token))["data"]["node"] is None
    mine = (await gql(POST, {"id": gid}, token=author.token))["data"]["node"]
    assert [e["node"]["caption"] for e in mine["editHistory"]["edges"]] == ["before"]


async def test_a_feed_page_with_edit_histories_costs_constant_sql(gql, make_users, worker, engine):
    author, fan = await make_users(2)
    await follow_all(gql, [fan], author)
    for i in range(12):
        gid = await post(gql, author, f"post {i}")
        await edit(gql, author, gid, f"post {i} edited")
    await worker.drain()
    large, many = await measured(gql, engine, FEED_HISTORY, {"n": 12}, fan.token)
    _, without = await measured(gql, engine, FEED_PLAIN, {"n": 12}, fan.token)
    edges = large["viewer"]["feed"]["edges"]
    assert len(edges) == 12 and all(e["node"]["editedAt"] for e in edges)
    assert all(
        [h["node"]["caption"] for h in e["node"]["editHistory"]["edges"]]
        == [e["node"]["caption"].removesuffix(" edited")]
        for e in edges
    )
    print(f"feed page of 12: {len(without)} statements, {len(many)} with edit histories")
    assert len(many) == len(without) + 1  # one statement for every post's history


async def test_concurrent_edits_each_keep_the_caption_they_replaced(gql, make_users, engine):
    (author,) = await make_users(1)
    gid = await post(gql, author, "v0")
    outs = await asyncio.gather(*(edit(gql, author, gid, f"v{i}") for i in range(1, 9)))
    assert all(o["__typename"] == "EditPostSuccess" for o in outs)
    node = (await gql(POST, {"id": gid}, token=author.token))["data"]["node"]
    history = [e["node"] for e in node["editHistory"]["edges"]]
    # one chain: every caption but the last was replaced exactly once, in time order
    captions = [node["caption"]] + [h["caption"] for h in history]
    assert sorted(captions) == [f"v{i}" for i in range(9)] and history[-1]["caption"] == "v0"
    assert history[0]["replacedAt"] == node["editedAt"]
    for newer, older in itertools.pairwise(history):
        assert older["replacedAt"] == newer["writtenAt"]
    assert history[-1]["writtenAt"] == node["createdAt"]
