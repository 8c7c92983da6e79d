"""Engagement on a post its reader may no longer see (deleted, or its author blocked the
reader) changes nothing and writes no event: likePost, unlikePost, addComment and
deleteComment answer NOT_FOUND, the like and comment rows, counters and outbox stay."""

from __future__ import annotations

from sqlalchemy import text

from schema.ids import decode_global_id
from tests.support.actions import post
from tests.support.documents import BLOCK, COMMENT, LIKE, UNLIKE

DELETE_POST = """mutation($id: ID!) { deletePost(input: { postId: $id }) { __typename } }"""
DELETE_COMMENT = """mutation($id: ID!) { deleteComment(input: { commentId: $id }) {
  __typename ... on Error { code } } }"""


async def state(engine, post_id) -> tuple:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM likes WHERE post_id = :p),"
                    " (SELECT count(*) FROM comments WHERE post_id = :p AND deleted_at IS NULL),"
                    " (SELECT count(*) FROM outbox WHERE aggregate_id = :p),"
                    " (SELECT count(*) FROM outbox),"
                    " (SELECT coalesce(sum(value), 0) FROM counter_shards WHERE entity_id = :p)"
                ),
                {"p": post_id},
            )
        ).one()
    return tuple(row)


def code(out: dict, field: str) -> str | None:
    result = out["data"][field]
    return result.get("code")


async def test_engagement_on_a_deleted_post_changes_nothing(gql, engine, make_users):
    author, fan = await make_users(2)
    gid = await post(gql, author, "soon gone")
    pid = decode_global_id(gid, "Post", "postId")
    assert "errors" not in await gql(LIKE, {"id": gid}, token=fan.token)
    out = await gql(COMMENT, {"id": gid, "body": "nice"}, token=fan.token)
    comment = out["data"]["addComment"]["comment"]["id"]
    assert (await gql(DELETE_POST, {"id": gid}, token=author.token))["data"]["deletePost"][
        "__typename"
    ] == "DeletePostSuccess"
    before = await state(engine, pid)
    assert code(await gql(UNLIKE, {"id": gid}, token=fan.token), "unlikePost") == "NOT_FOUND"
    assert code(await gql(LIKE, {"id": gid}, token=fan.token), "likePost") == "NOT_FOUND"
    out = await gql(COMMENT, {"id": gid, "body": "late"}, token=fan.token)
    assert code(out, "addComment") == "NOT_FOUND"
    out = await gql(DELETE_COMMENT, {"id": comment}, token=fan.token)
    assert code(out, "deleteComment") == "NOT_FOUND", out
    assert await state(engine, pid) == before


async def test_unliking_a_post_one_can_no_longer_see_changes_nothing(gql, engine, make_users):
    author, fan = await make_users(2)
    gid = await post(gql, author, "blocked later")
    pid = decode_global_id(gid, "Post", "postId")
    assert "errors" not in await gql(LIKE, {"id": gid}, token=fan.token)
    assert "errors" not in await gql(BLOCK, {"id": fan.gid}, token=author.token)
    before = await state(engine, pid)
    assert code(await gql(UNLIKE, {"id": gid}, token=fan.token), "unlikePost") == "NOT_FOUND"
    assert await state(engine, pid) == before
