"""Use cases: notify of comments, replies and ``@mentions``: each person once per event, by the most
specific kind, never the writer, never across a block, only who sees the post."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.locks import advisory_xact_lock
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
from domain.visibility.predicates import is_live

_COMMENT = text(
    f"""
    SELECT c.author_id, c.post_id, c.body, p.author_id AS post_author_id,
           pc.author_id AS parent_author_id
    FROM comments c
    JOIN posts p ON p.id = c.post_id AND {is_live("p")}
    LEFT JOIN comments pc ON pc.id = c.parent_id AND {is_live("pc")}
    WHERE c.id = :id AND {is_live("c")}
    """
)


async def mentioned_users(conn: AsyncConnection, body: str, *, limit: int) -> list[uuid.UUID]:
    """The active users ``body`` mentions, in order, at most ``limit`` (``@alice.``: ``alice.`` if
    it exists, else ``alice``)."""
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
    """Handle ``comment.created``: REPLY, COMMENT and MENTION in one transaction; idempotent."""
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


_CAPTION = text(
    f"SELECT author_id, caption FROM posts WHERE id = :id AND {is_live()} AND state = 'published'"
)

#: Who a caption of the post already mentioned (a MENTION with the post and no comment).
_TOLD = text(
    "SELECT recipient_id FROM notifications WHERE post_id = :id AND kind = 'mention'"
    " AND comment_id IS NULL AND recipient_id = ANY(CAST(:ids AS uuid[]))"
)


async def notify_post_mentions(
    engine: AsyncEngine, config: NotificationConfig, event: EventRef, post_id: uuid.UUID
) -> Changes:
    """Handle ``post.created`` / ``post.edited``: a MENTION for each user the caption mentions whom
    no caption of the post mentioned before. Idempotent; the post's advisory lock serialises its
    jobs, so nobody is told twice."""
    async with engine.begin() as conn:
        row = (await conn.execute(_CAPTION, {"id": post_id})).first()
        if row is None or "@" not in row.caption:
            return Changes()
        mentioned = await mentioned_users(conn, row.caption, limit=config.max_mentions)
        if not mentioned:
            return Changes()
        await advisory_xact_lock(conn, "caption-mentions", post_id)
        told = {r[0] for r in await conn.execute(_TOLD, {"id": post_id, "ids": mentioned})}
        mentioned = [u for u in mentioned if u not in told]
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
