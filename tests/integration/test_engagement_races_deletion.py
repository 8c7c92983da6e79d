"""Engagement that races the post's deletion answers what it did: the deletion commits
while the like, unlike, comment or comment deletion is between its visibility check and
its write, and then either the engagement waited for nothing (it was first: success,
and the change is there) or it answers NOT_FOUND and changed nothing (no like row
removed or added, no ``like.removed``/``comment.deleted`` event).

The interleaving is forced, not hoped for: a listener on the app's engine starts the
real ``delete_post`` use case right before the engagement's write statement, and lets
that statement go on once the deletion has either committed or is seen waiting for a
lock in ``pg_stat_activity`` (the engagement holds the post).
"""

from __future__ import annotations

import asyncio
import uuid

import pytest
from sqlalchemy import event, text
from sqlalchemy.util import await_only

from domain.posts.delete_post import delete_post
from schema.ids import decode_global_id
from tests.support.actions import post
from tests.support.documents import COMMENT, LIKE, UNLIKE
from tests.support.polling import eventually

DELETE_COMMENT = """mutation($id: ID!) { deleteComment(input: { commentId: $id }) {
  __typename ... on Error { code } } }"""


class DeleteWhile:
    """Before the first statement containing ``trigger``, run ``delete_post`` and wait
    until it committed or blocks on a lock."""

    def __init__(self, engine, settings, author_id: uuid.UUID, post_id: uuid.UUID) -> None:
        self.engine, self.settings = engine, settings
        self.author_id, self.post_id = author_id, post_id
        self.trigger: str | None = None
        self.deletion: asyncio.Task | None = None

    def __call__(self, conn, _cursor, statement: str, *_args) -> None:
        if self.trigger is not None and self.trigger in statement and self.deletion is None:
            await_only(self._delete())

    async def _delete(self) -> None:
        self.deletion = asyncio.create_task(
            delete_post(
                self.engine,
                self.author_id,
                self.post_id,
                counter_shards=self.settings.counter_shards,
            )
        )

        async def committed_or_waiting() -> bool:
            if self.deletion.done():
                return True
            async with self.engine.connect() as conn:
                waiting = await conn.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        " AND datname = current_database() AND query LIKE '%FOR UPDATE%'"
                    )
                )
            return bool(waiting)

        await eventually(committed_or_waiting)


async def _state(engine, pid: uuid.UUID, uid: uuid.UUID) -> tuple[int, int, int]:
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT (SELECT count(*) FROM likes WHERE post_id = :p AND user_id = :u),"
                    " (SELECT count(*) FROM outbox WHERE aggregate_id = :p"
                    "   AND topic IN ('like.removed', 'like.created')),"
                    " (SELECT count(*) FROM comments WHERE post_id = :p AND deleted_at IS NULL)"
                ),
                {"p": pid, "u": uid},
            )
        ).one()
    return tuple(row)


@pytest.mark.parametrize("action", ["unlike", "like", "comment", "delete_comment"])
async def test_engagement_racing_the_posts_deletion_answers_what_it_did(
    action, gql, engine, settings, make_users
) -> None:
    author, fan = await make_users(2)
    gid = await post(gql, author, f"racing {action}")
    pid = decode_global_id(gid, "Post", "postId")
    comment_id = None
    if action in ("unlike", "delete_comment"):
        assert "errors" not in await gql(LIKE, {"id": gid}, token=fan.token)
    if action == "delete_comment":
        out = await gql(COMMENT, {"id": gid, "body": "first"}, token=fan.token)
        comment_id = out["data"]["addComment"]["comment"]["id"]
    before = await _state(engine, pid, fan.id)
    race = DeleteWhile(engine, settings, author.id, pid)
    race.trigger = {
        "unlike": "DELETE FROM likes",
        "like": "INSERT INTO likes",
        "comment": "INSERT INTO comments",
        "delete_comment": "UPDATE comments SET deleted_at",
    }[action]
    event.listen(engine.sync_engine, "before_cursor_execute", race)
    try:
        if action == "unlike":
            out = (await gql(UNLIKE, {"id": gid}, token=fan.token))["data"]["unlikePost"]
        elif action == "like":
            out = (await gql(LIKE, {"id": gid}, token=fan.token))["data"]["likePost"]
        elif action == "comment":
            variables = {"id": gid, "body": "racing"}
            out = (await gql(COMMENT, variables, token=fan.token))["data"]["addComment"]
        else:
            variables = {"id": comment_id}
            out = (await gql(DELETE_COMMENT, variables, token=fan.token))["data"]["deleteComment"]
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", race)
    assert race.deletion is not None, "the write statement never ran"
    assert await race.deletion is True  # the post is deleted, now or right after
    after = await _state(engine, pid, fan.id)
    if out.get("code") == "NOT_FOUND":
        assert after == before, (action, out)
        return
    assert out["__typename"].endswith("Success"), out
    likes, events, comments = before
    expected = {
        "unlike": (likes - 1, events + 1, comments),
        "like": (likes + 1, events + 1, comments),
        "comment": (likes, events, comments + 1),
        "delete_comment": (likes, events, comments - 1),
    }[action]
    assert after == expected, (action, out, before, after)
