"""Use cases: notify of comments, replies and ``@mentions``: each person once per event,
by the most specific kind (REPLY, COMMENT, MENTION), never the writer, never across a
block, only who can see the post.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.notifications.config import NotificationConfig
from domain.notifications.mentions import extract_mentions
from domain.notifications.store import (
    Changes,
    Draft,
    EventRef,
    eligible_recipients,
    insert_notifications,
    users_by_usernames,
)

_COMMENT = text(
    """
    SELECT c.author_id, c.post_id, c.body, p.author_id AS post_author_id,
           pc.author_id AS parent_author_id
    FROM comments c
    JOIN posts p ON p.id = c.post_id AND p.deleted_at IS NULL
    LEFT JOIN comments pc ON pc.id = c.parent_id AND pc.deleted_at IS NULL
    WHERE c.id = :id AND c.deleted_at IS NULL
    """
)


async def mentioned_users(conn: AsyncConnection, body: str, *, limit: int) -> list[uuid.UUID]:
    """The ids of the active users ``body`` mentions, in order, at most ``limit`` (for
    ``@alice.`` the user ``alice.`` if one exists, else ``alice``)."""
    mentions = extract_mentions(body, limit=limit)
    found = await users_by_usernames(conn, [c for m in mentions for c in m])
    out: list[uuid.UUID] = []
    for candidates in mentions:
        user_id = next((found[c] for c in candidates if c in found), None)
        if user_id is not None and user_id not in out:
            out.append(user_id)
    return out


async def notify_comment(
    engine: AsyncEngine, config: NotificationConfig, event: EventRef, comment_id: uuid.UUID
) -> Changes:
    """Handle ``comment.created``: REPLY, COMMENT and MENTION notifications in one
    transaction; nothing if the comment or post is gone. Idempotent."""
    async with engine.begin() as conn:
        row = (await conn.execute(_COMMENT, {"id": comment_id})).first()
        if row is None:
            return Changes()
        wanted: dict[uuid.UUID, str] = {}
        if row.parent_author_id is not None:
            wanted[row.parent_author_id] = "reply"
        wanted.setdefault(row.post_author_id, "comment")
        for user_id in await mentioned_users(conn, row.body, limit=config.max_mentions):
            wanted.setdefault(user_id, "mention")
        ok = await eligible_recipients(conn, row.author_id, wanted, post_id=row.post_id)
        drafts = [
            Draft(user_id, kind, actor_id=row.author_id, post_id=row.post_id, comment_id=comment_id)
            for user_id, kind in wanted.items()
            if user_id in ok
        ]
        created = await insert_notifications(
            conn, event, drafts, counter_shards=config.counter_shards
        )
    return Changes(created=created)


async def notify_post_mentions(
    engine: AsyncEngine, config: NotificationConfig, event: EventRef, post_id: uuid.UUID
) -> Changes:
    """Handle ``post.created`` {post_id, author_id}: a MENTION for every user the caption
    mentions (read from the posts table; nothing if the post was deleted meanwhile).
    One transaction, idempotent per event."""
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                text("SELECT author_id, caption FROM posts WHERE id = :id AND deleted_at IS NULL"),
                {"id": post_id},
            )
        ).first()
        if row is None or "@" not in row.caption:
            return Changes()
        mentioned = await mentioned_users(conn, row.caption, limit=config.max_mentions)
        ok = await eligible_recipients(conn, row.author_id, mentioned, post_id=post_id)
        drafts = [
            Draft(user_id, "mention", actor_id=row.author_id, post_id=post_id)
            for user_id in mentioned
            if user_id in ok
        ]
        created = await insert_notifications(
            conn, event, drafts, counter_shards=config.counter_shards
        )
    return Changes(created=created)
