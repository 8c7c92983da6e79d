"""Explore's PostgreSQL reads: candidate facts and hashtags of posts."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.feed.ranking_queries import KIND_SQL
from domain.feed.timelines import Entry
from domain.feed.timelines.entries import time_of
from domain.reads import fetch_rows
from domain.visibility.predicates import is_live


class CandidateFacts(NamedTuple):
    """A live published candidate: entry (µs, id), author, media kind, whether followed."""

    entry: Entry
    author_id: uuid.UUID
    kind: str
    followed: bool


# One row of arrays (decoded in C); the follow probe uses the pair's partial unique index.
_FACTS = (
    "SELECT array_agg(p.id), array_agg(p.author_id), array_agg("
    + KIND_SQL
    + "), array_agg((extract(epoch FROM p.created_at) * 1000000)::bigint),"
    " array_agg(EXISTS (SELECT 1 FROM follows f"
    f" WHERE f.follower_id = $1 AND f.followee_id = p.author_id AND {is_live('f')}))"
    f" FROM posts p WHERE p.id = ANY($2::uuid[]) AND {is_live('p')}"
    " AND p.state = 'published'"
)

# A tag's posts newest first (post_hashtags_recent_idx); $1 tag, $2/$3 the position before.
_TAG_ENTRIES = (
    "SELECT ph.post_id, (extract(epoch FROM ph.created_at) * 1000000)::bigint"
    " FROM hashtags h JOIN post_hashtags ph ON ph.hashtag_id = h.id"
    f" JOIN posts p ON p.id = ph.post_id AND {is_live('p')}"
    " WHERE h.name = $1 AND ($2::timestamptz IS NULL OR (ph.created_at, ph.post_id) < ($2, $3))"
    " ORDER BY ph.created_at DESC, ph.post_id DESC LIMIT $4"
)

_TAGS = (
    "SELECT ph.post_id, h.name FROM post_hashtags ph JOIN hashtags h ON h.id = ph.hashtag_id"
    " WHERE ph.post_id = ANY($1::uuid[])"
)


async def candidate_facts(
    db: AsyncEngine | AsyncConnection, viewer_id: uuid.UUID, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, CandidateFacts]:
    """``{post id: CandidateFacts}`` of the live published posts among ``ids``, one statement;
    visibility is the caller's."""
    if not ids:
        return {}
    ((post_ids, authors, kinds, times, follows),) = await fetch_rows(
        db, _FACTS, viewer_id, list(ids)
    )
    if post_ids is None:
        return {}
    return {
        p: CandidateFacts(Entry(t, p), a, k, f)
        for p, a, k, t, f in zip(post_ids, authors, kinds, times, follows, strict=True)
    }


async def hashtags_of(
    db: AsyncEngine | AsyncConnection, post_ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, list[str]]:
    """``{post id: folded hashtags}`` for ``post_ids`` (untagged absent), one statement."""
    if not post_ids:
        return {}
    out: dict[uuid.UUID, list[str]] = {}
    for post_id, name in await fetch_rows(db, _TAGS, list(post_ids)):
        out.setdefault(post_id, []).append(name)
    return out


async def tag_entries(
    db: AsyncEngine | AsyncConnection, tag: str, before: Entry | None, count: int
) -> tuple[list[Entry], bool]:
    """Up to ``count`` entries of live posts tagged ``tag`` strictly before ``before`` (None: the
    newest), newest first, and whether more follow; visibility is the caller's."""
    at = None if before is None else time_of(before.score)
    pid = None if before is None else before.post_id
    rows = await fetch_rows(db, _TAG_ENTRIES, tag, at, pid, count + 1)
    return [Entry(int(us), p) for p, us in rows[:count]], len(rows) > count
