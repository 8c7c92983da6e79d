"""The PostgreSQL part of a purge (docs/api/account-lifecycle.md "Account lifecycle"): one batch per
transaction, returning rows taken; counters move in the same transaction, so ``roost counts
verify`` stays clean."""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, add_deltas
from domain.db import AnyRow
from domain.moderation.account_locks import lock_active
from domain.notifications.like_groups import row_shows_unread
from domain.notifications.queries import UNREAD_KIND
from domain.visibility.predicates import is_live

# The account's posts, live ones first (posts_author_live_idx, then the deleted ones).
_POSTS = text(
    f"""
    (SELECT id, state = 'published' AS live FROM posts
     WHERE author_id = :u AND {is_live()} LIMIT :n)
    UNION ALL
    (SELECT id, false FROM posts WHERE author_id = :u AND deleted_at IS NOT NULL LIMIT :n)
    LIMIT :n
    """
)
# Every comment on those posts, anyone's, live or not (comments_post_id_idx).
_COMMENTS_ON = text("SELECT id FROM comments WHERE post_id = ANY(CAST(:posts AS uuid[]))")
# The account's own comments (comments_author_post_idx, then the deleted ones)...
_OWN_COMMENTS = text(
    f"""
    (SELECT id FROM comments WHERE author_id = :u AND {is_live()} LIMIT :n)
    UNION ALL
    (SELECT id FROM comments WHERE author_id = :u AND deleted_at IS NOT NULL LIMIT :n)
    LIMIT :n
    """
)
# ... and every reply under them (a thread goes with its top-level comment).
_REPLIES_TO = text("SELECT id FROM comments WHERE parent_id = ANY(CAST(:ids AS uuid[]))")
# The account's follows either side, locked: deleting them moves its counters.
_FOLLOWS = text(
    f"""
    WITH picked AS (
        (SELECT id FROM follows WHERE follower_id = :u AND {is_live()} LIMIT :n)
        UNION ALL
        (SELECT id FROM follows WHERE followee_id = :u AND {is_live()} LIMIT :n)
        UNION ALL
        (SELECT id FROM follows WHERE follower_id = :u AND deleted_at IS NOT NULL LIMIT :n)
        UNION ALL
        (SELECT id FROM follows WHERE followee_id = :u AND deleted_at IS NOT NULL LIMIT :n)
        LIMIT :n
    )
    SELECT f.id, f.follower_id, f.followee_id, {is_live("f")} AS live
    FROM follows f JOIN picked USING (id)
    FOR UPDATE OF f
    """
)
_FORGET_POINTING = text(
    """
    DELETE FROM notifications
    WHERE post_id = ANY(CAST(:posts AS uuid[])) OR comment_id = ANY(CAST(:comments AS uuid[]))
    RETURNING recipient_id, count, read_at
    """
)
_POST_ROWS = [
    "DELETE FROM likes WHERE post_id = ANY(CAST(:posts AS uuid[]))",
    "DELETE FROM post_hashtags WHERE post_id = ANY(CAST(:posts AS uuid[]))",
    "DELETE FROM post_revisions WHERE post_id = ANY(CAST(:posts AS uuid[]))",
    "DELETE FROM reports WHERE post_id = ANY(CAST(:posts AS uuid[]))",
    # Parents and replies in one statement: the foreign key is checked at its end.
    "DELETE FROM comments WHERE id = ANY(CAST(:comments AS uuid[]))",
    "DELETE FROM counter_shards WHERE entity_id = ANY(CAST(:posts AS uuid[]))",
    "DELETE FROM posts WHERE id = ANY(CAST(:posts AS uuid[]))",
]

#: Rows that only belong to the account: one bounded DELETE each, through an index.
_SIMPLE: dict[str, str] = {
    "likes": "DELETE FROM likes WHERE (post_id, user_id) IN"
    " (SELECT post_id, user_id FROM likes WHERE user_id = :u LIMIT :n)",
    "blocks": "DELETE FROM blocks WHERE (blocker_id, blocked_id) IN ("
    "(SELECT blocker_id, blocked_id FROM blocks WHERE blocker_id = :u LIMIT :n)"
    " UNION ALL (SELECT blocker_id, blocked_id FROM blocks WHERE blocked_id = :u LIMIT :n)"
    " LIMIT :n)",
    "mutes": "DELETE FROM mutes WHERE (muter_id, muted_id) IN ("
    "(SELECT muter_id, muted_id FROM mutes WHERE muter_id = :u LIMIT :n)"
    " UNION ALL (SELECT muter_id, muted_id FROM mutes WHERE muted_id = :u LIMIT :n)"
    " LIMIT :n)",
    "follow_requests": "DELETE FROM follow_requests WHERE id IN ("
    "(SELECT id FROM follow_requests WHERE requester_id = :u LIMIT :n)"
    " UNION ALL (SELECT id FROM follow_requests WHERE target_id = :u LIMIT :n)"
    " LIMIT :n)",
    "reports": "DELETE FROM reports WHERE id IN ("
    "(SELECT id FROM reports WHERE reporter_id = :u LIMIT :n)"
    " UNION ALL (SELECT id FROM reports WHERE user_id = :u LIMIT :n)"
    " LIMIT :n)",
    "sessions": "DELETE FROM sessions WHERE id IN"
    " (SELECT id FROM sessions WHERE user_id = :u LIMIT :n)",
    "device_tokens": "DELETE FROM device_tokens WHERE id IN"
    " (SELECT id FROM device_tokens WHERE user_id = :u LIMIT :n)",
    "data_exports": "DELETE FROM data_exports WHERE id IN"
    " (SELECT id FROM data_exports WHERE user_id = :u LIMIT :n)",
    "email_tokens": "DELETE FROM email_tokens WHERE id IN"
    " (SELECT id FROM email_tokens WHERE user_id = :u LIMIT :n)",
}
#: The account's own notifications.
_OWN_NOTIFICATIONS = text(
    "DELETE FROM notifications WHERE id IN"
    " (SELECT id FROM notifications WHERE recipient_id = :u LIMIT :n)"
    " RETURNING recipient_id, count, read_at"
)
_NAMING_ACTOR = text(
    "DELETE FROM notifications WHERE actor_id = :u RETURNING recipient_id, count, read_at"
)
#: Once, at the end: small leftovers no index finds by the account.
_ONCE = [
    "UPDATE reports SET resolved_by = NULL WHERE resolved_by = :u",
    "DELETE FROM notification_sources WHERE actor_id = :u OR recipient_id = :u",
    "DELETE FROM author_feed_modes WHERE author_id = :u",
]


def _unread_deltas(rows: Iterable[AnyRow]) -> list[Delta]:
    return [Delta(r.recipient_id, UNREAD_KIND, -1) for r in rows if row_shows_unread(r)]


async def purge_posts(engine: AsyncEngine, user_id: uuid.UUID, *, batch: int, shards: int) -> int:
    """Delete a batch of the account's posts with their likes, comments, links, reports, counters
    and notifications; returns posts deleted."""
    async with engine.begin() as conn:
        found = (await conn.execute(_POSTS, {"u": user_id, "n": batch})).all()
        if not found:
            return 0
        posts = [r.id for r in found]
        comments = [r[0] for r in await conn.execute(_COMMENTS_ON, {"posts": posts})]
        deltas = await _forget_pointing(conn, posts, comments)
        for sql in _POST_ROWS:
            await conn.execute(text(sql), {"posts": posts, "comments": comments})
        live = sum(1 for r in found if r.live)
        deltas.append(Delta(user_id, "posts", -live))
        await add_deltas(conn, deltas, shards=shards)
    return len(found)


async def purge_own_comments(
    engine: AsyncEngine, user_id: uuid.UUID, *, batch: int, shards: int
) -> int:
    """Delete a batch of the account's comments on others' posts, with replies and notifications (no
    counter moves: inactive). Returns comments deleted."""
    async with engine.begin() as conn:
        mine = [r[0] for r in await conn.execute(_OWN_COMMENTS, {"u": user_id, "n": batch})]
        if not mine:
            return 0
        ids = mine + [r[0] for r in await conn.execute(_REPLIES_TO, {"ids": mine})]
        deltas = await _forget_pointing(conn, [], ids)
        await conn.execute(
            text("DELETE FROM comments WHERE id = ANY(CAST(:ids AS uuid[]))"), {"ids": ids}
        )
        await add_deltas(conn, deltas, shards=shards)
    return len(mine)


async def purge_follows(engine: AsyncEngine, user_id: uuid.UUID, *, batch: int, shards: int) -> int:
    """Delete a batch of the account's follows, either side, correcting its own counters; return how
    many."""
    async with engine.begin() as conn:
        rows = (await conn.execute(_FOLLOWS, {"u": user_id, "n": batch})).all()
        if not rows:
            return 0
        others = {r.followee_id if r.follower_id == user_id else r.follower_id for r in rows}
        active = await lock_active(conn, others)
        await conn.execute(
            text("DELETE FROM follows WHERE id = ANY(CAST(:ids AS uuid[]))"),
            {"ids": [r.id for r in rows]},
        )
        deltas = []
        for r in rows:
            if not r.live:
                continue
            if r.follower_id == user_id and r.followee_id in active:
                deltas.append(Delta(user_id, "following", -1))
            elif r.followee_id == user_id and r.follower_id in active:
                deltas.append(Delta(user_id, "followers", -1))
        await add_deltas(conn, deltas, shards=shards)
    return len(rows)


async def purge_simple(engine: AsyncEngine, user_id: uuid.UUID, table: str, *, batch: int) -> int:
    """Delete a batch of the account's rows of ``table`` (:data:`_SIMPLE`); return how many."""
    async with engine.begin() as conn:
        result = await conn.execute(text(_SIMPLE[table]), {"u": user_id, "n": batch})
    return result.rowcount or 0


async def purge_own_notifications(
    engine: AsyncEngine, user_id: uuid.UUID, *, batch: int, shards: int
) -> int:
    """Delete a batch of the account's notifications with its unread counter; return how many."""
    async with engine.begin() as conn:
        rows = (await conn.execute(_OWN_NOTIFICATIONS, {"u": user_id, "n": batch})).all()
        await add_deltas(conn, _unread_deltas(rows), shards=shards)
    return len(rows)


async def finish_rows(conn: AsyncConnection, user_id: uuid.UUID, *, shards: int) -> None:
    """In the final transaction: the rest, the account's counters, and like notifications naming
    it."""
    rows = await conn.execute(_NAMING_ACTOR, {"u": user_id})
    await add_deltas(conn, _unread_deltas(rows), shards=shards)
    for sql in _ONCE:
        await conn.execute(text(sql), {"u": user_id})
    await conn.execute(text("DELETE FROM counter_shards WHERE entity_id = :u"), {"u": user_id})


async def _forget_pointing(
    conn: AsyncConnection, posts: list[uuid.UUID], comments: list[uuid.UUID]
) -> list[Delta]:
    rows = await conn.execute(_FORGET_POINTING, {"posts": posts, "comments": comments})
    return _unread_deltas(rows)


#: The tables of :func:`purge_simple`, in the order the purge empties them.
SIMPLE_TABLES = tuple(_SIMPLE)
