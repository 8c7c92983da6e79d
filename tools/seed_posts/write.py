"""The bulk transaction's statements: read the population, COPY hashtag links, count."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import asyncpg
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id
from domain.engagement.hashtags import extract_hashtags
from domain.visibility.predicates import is_active
from tools.seed_posts.generate import PostRecord, _Person


async def _population(conn: AsyncConnection, users: Sequence[uuid.UUID] | None) -> list[_Person]:
    where = "AND u.id = ANY(CAST(:ids AS uuid[]))" if users is not None else ""
    rows = await conn.execute(
        text(
            f"""
            SELECT u.id, u.username, coalesce(sum(c.value), 0)::bigint AS followers
            FROM users u
            LEFT JOIN counter_shards c ON c.entity_id = u.id AND c.kind = 'followers'
            WHERE {is_active("u")} {where}
            GROUP BY u.id ORDER BY u.id
            """
        ),
        {"ids": list(users)} if users is not None else {},
    )
    return [_Person(r.id, r.username, int(r.followers)) for r in rows]


async def _posts_exist(conn: AsyncConnection, users: Sequence[uuid.UUID] | None) -> bool:
    if users is None:
        return bool(await conn.scalar(text("SELECT EXISTS (SELECT 1 FROM posts)")))
    return bool(
        await conn.scalar(
            text("SELECT EXISTS (SELECT 1 FROM posts WHERE author_id = ANY(CAST(:ids AS uuid[])))"),
            {"ids": list(users)},
        )
    )


_ADD_POST_COUNTS = text(
    """
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT a, 'posts', 0, n
    FROM unnest(CAST(:authors AS uuid[]), CAST(:counts AS bigint[])) AS t(a, n)
    ORDER BY a
    ON CONFLICT (entity_id, kind, shard)
    DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """
)

_MARK_ACTIVE = text(
    """
    UPDATE users u SET last_active_at = greatest(u.last_active_at, s.ts)
    FROM seed_posts_active s WHERE u.id = s.id
    """
)


async def _tag_posts(
    conn: AsyncConnection, apg: asyncpg.Connection, records: list[PostRecord]
) -> int:
    """Record the hashtags of the bulk posts as create_post does (``hashtags`` rows for
    new names, one ``post_hashtags`` row per post and tag); return the links written."""
    by_caption = {c: extract_hashtags(c) for c in {r[2] for r in records}}
    names = sorted({t for tags in by_caption.values() for t in tags})
    if not names:
        return 0
    await conn.execute(
        text(
            "INSERT INTO hashtags (id, name)"
            " SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:names AS text[]))"
            " ON CONFLICT (name) DO NOTHING"
        ),
        {"ids": [new_id() for _ in names], "names": names},
    )
    rows = await conn.execute(
        text("SELECT name, id FROM hashtags WHERE name = ANY(CAST(:names AS text[]))"),
        {"names": names},
    )
    ids: dict[str, uuid.UUID] = {name: tag_id for name, tag_id in rows}
    links = [
        (ids[tag], post_id, created_at)
        for post_id, _, caption, _, created_at in records
        for tag in by_caption[caption]
    ]
    await apg.copy_records_to_table(
        "post_hashtags", records=links, columns=["hashtag_id", "post_id", "created_at"]
    )
    return len(links)
