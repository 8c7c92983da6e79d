"""What the ranked score reads of each candidate post in PostgreSQL
(docs/architecture/home-feed.md "Ranked order")."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.reads import fetch_rows
from domain.visibility.predicates import is_live

#: A post's media kind (domain.feed.ranking.MEDIA_KINDS or TEXT).
KIND_SQL = (
    "CASE WHEN media @> '[{\"kind\": \"video\"}]' THEN 'video'"
    " WHEN media <> '[]'::jsonb THEN 'image' ELSE 'text' END"
)

# One row of three arrays: the driver decodes arrays in C, so a window costs one row.
_FACTS = (
    f"SELECT array_agg(id), array_agg(author_id), array_agg({KIND_SQL}) FROM posts"
    f" WHERE id = ANY($1::uuid[]) AND {is_live()}"
)


async def live_post_facts(
    db: AsyncEngine | AsyncConnection, ids: Sequence[uuid.UUID]
) -> dict[uuid.UUID, tuple[uuid.UUID, str]]:
    """``{post id: (author id, media kind)}`` of the live posts among ``ids``."""
    if not ids:
        return {}
    ((post_ids, authors, kinds),) = await fetch_rows(db, _FACTS, list(ids))
    if post_ids is None:
        return {}
    return {p: (a, k) for p, a, k in zip(post_ids, authors, kinds, strict=True)}
