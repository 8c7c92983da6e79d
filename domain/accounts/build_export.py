"""Use case (the worker's): prepare a data export, one gzip JSON document rendered section by
section in PostgreSQL (docs/api/account-lifecycle.md "Account lifecycle")."""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import json
import uuid
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import utcnow
from domain.visibility.predicates import is_active, is_live

#: The archive's format, named in the document so later versions can be told apart.
FORMAT = "roost-export/1"


def _ts(column: str) -> str:
    """A timestamptz column as RFC 3339 UTC with µs (docs/api/README.md "The API")."""
    return f"to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')"


#: section -> (rows with camelCase columns, their order), each read through an index.
SECTIONS: dict[str, tuple[str, str]] = {
    "posts": (
        f'SELECT id, caption, state, media, {_ts("created_at")} AS "createdAt",'
        f" created_at AS k1, id AS k2 FROM posts WHERE author_id = :u AND {is_live()}",
        "k1, k2",
    ),
    "comments": (
        f'SELECT id, post_id AS "postId", parent_id AS "parentId", body,'
        f' {_ts("created_at")} AS "createdAt", created_at AS k1, id AS k2'
        f" FROM comments WHERE author_id = :u AND {is_live()}",
        "k1, k2",
    ),
    "likes": (
        f'SELECT post_id AS "postId", {_ts("created_at")} AS "createdAt",'
        " created_at AS k1, post_id AS k2 FROM likes WHERE user_id = :u",
        "k1, k2",
    ),
    "following": (
        f'SELECT u.id AS "userId", u.username, {_ts("f.created_at")} AS since,'
        " f.created_at AS k1, f.id AS k2 FROM follows f JOIN users u ON u.id = f.followee_id"
        f" WHERE f.follower_id = :u AND {is_live('f')} AND {is_active('u')}",
        "k1, k2",
    ),
    "followers": (
        f'SELECT u.id AS "userId", u.username, {_ts("f.created_at")} AS since,'
        " f.created_at AS k1, f.id AS k2 FROM follows f JOIN users u ON u.id = f.follower_id"
        f" WHERE f.followee_id = :u AND {is_live('f')} AND {is_active('u')}",
        "k1, k2",
    ),
    "blocks": (
        f'SELECT u.id AS "userId", u.username, {_ts("b.created_at")} AS since,'
        " b.created_at AS k1, u.id AS k2 FROM blocks b JOIN users u ON u.id = b.blocked_id"
        " WHERE b.blocker_id = :u",
        "k1, k2",
    ),
    "mutes": (
        f'SELECT u.id AS "userId", u.username, {_ts("m.created_at")} AS since,'
        " m.created_at AS k1, u.id AS k2 FROM mutes m JOIN users u ON u.id = m.muted_id"
        " WHERE m.muter_id = :u",
        "k1, k2",
    ),
    "notifications": (
        f'SELECT n.id, n.kind, n.count, a.username AS actor, n.post_id AS "postId",'
        f' n.comment_id AS "commentId", {_ts("n.created_at")} AS "createdAt",'
        " n.read_at IS NOT NULL AS read, n.created_at AS k1, n.id AS k2"
        f" FROM notifications n LEFT JOIN users a ON a.id = n.actor_id AND {is_active('a')}"
        " WHERE n.recipient_id = :u AND n.count > 0",
        "k1, k2",
    ),
}
_PROFILE = (
    f'SELECT id, username, display_name AS "displayName", bio, email,'
    f' is_private AS "isPrivate", website, {_ts("created_at")} AS "createdAt"'
    " FROM users WHERE id = :u"
)
_LOCK_PENDING = text(
    "SELECT user_id FROM data_exports WHERE id = :id AND status = 'pending' FOR UPDATE"
)
_STORE = text(
    """
    UPDATE data_exports SET status = 'ready', archive = :archive, size_bytes = :size,
        ready_at = now(), expires_at = now() + make_interval(secs => :keep)
    WHERE id = :id
    """
)


def _section_sql(select: str, order: str) -> str:
    # The ordering keys (k1, k2) order the array and are left out of its objects.
    return (
        f"SELECT coalesce(json_agg((to_jsonb(t) - 'k1' - 'k2') ORDER BY {order}), '[]')::text"
        f" FROM ({select}) t"
    )


_MEDIA = text(
    "SELECT p.id, m.item FROM posts p CROSS JOIN LATERAL jsonb_array_elements(p.media)"
    f" WITH ORDINALITY AS m(item, n) WHERE p.author_id = :u AND {is_live('p')}"
    " AND m.item ? 'variants' ORDER BY p.created_at, p.id, m.n"
)


async def _media(
    conn: AsyncConnection, user_id: uuid.UUID, public_url: Callable[[str], str]
) -> str:
    out = []
    for post_id, item in await conn.execute(_MEDIA, {"u": user_id}):
        out.append(
            {
                "postId": str(post_id),
                "kind": item.get("kind"),
                "mimeType": item.get("mimeType"),
                "width": item.get("width"),
                "height": item.get("height"),
                "altText": item.get("altText"),
                "variants": [
                    {
                        "name": v["name"],
                        "url": public_url(v["key"]),
                        "mimeType": v["mimeType"],
                        "width": v["width"],
                        "height": v["height"],
                    }
                    for v in item.get("variants") or ()
                ],
            }
        )
    return json.dumps(out, separators=(",", ":"))


async def collect_data(
    conn: AsyncConnection,
    user_id: uuid.UUID,
    *,
    public_url: Callable[[str], str] | None = None,
) -> bytes | None:
    """The account's data as one UTF-8 JSON document (None: no account) in the caller's snapshot:
    ``format``, ``exportedAt``, ``profile``, ``posts``, ``comments``, ``likes``, ``following``,
    ``followers``, ``blocks``, ``mutes``, ``notifications`` and ``media`` (published variants
    with URLs from ``public_url``; None: no media section)."""
    profile = await conn.scalar(
        text(f"SELECT to_jsonb(t)::text FROM ({_PROFILE}) t"), {"u": user_id}
    )
    if profile is None:
        return None
    head = {"format": FORMAT, "exportedAt": utcnow().strftime("%Y-%m-%dT%H:%M:%S.%fZ")}
    parts = [json.dumps(head, separators=(",", ":"))[:-1], ',"profile":', profile]
    for section, (select, order) in SECTIONS.items():
        rows = await conn.scalar(text(_section_sql(select, order)), {"u": user_id})
        parts += [f',"{section}":', rows]
    if public_url is not None:
        parts += [',"media":', await _media(conn, user_id, public_url)]
    parts.append("}")
    return "".join(parts).encode()


async def build_export(
    engine: AsyncEngine,
    export_id: uuid.UUID,
    *,
    keep: dt.timedelta,
    public_url: Callable[[str], str] | None = None,
) -> bool:
    """Prepare ``export_id``'s archive if pending (one REPEATABLE READ snapshot, kept until now +
    ``keep``); True if prepared now. Idempotent (row locked). Raises DBAPIError."""
    async with engine.begin() as conn:
        user_id = await conn.scalar(_LOCK_PENDING, {"id": export_id})
        if user_id is None:
            return False
        async with engine.connect() as reader:
            reader = await reader.execution_options(isolation_level="REPEATABLE READ")
            async with reader.begin():
                document = await collect_data(reader, user_id, public_url=public_url)
        if document is None:
            return False
        archive = await asyncio.to_thread(gzip.compress, document, 6)  # off the event loop
        await conn.execute(
            _STORE,
            {
                "id": export_id,
                "archive": archive,
                "size": len(archive),
                "keep": keep.total_seconds(),
            },
        )
    return True
