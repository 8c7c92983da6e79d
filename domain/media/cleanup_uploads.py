"""Use case: expire the uploads nobody used (the hourly cleanup, docs/api/media.md "Media")."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.media.config import MediaConfig, raw_key
from domain.media.ports import ObjectStore

log = logging.getLogger("roost.media")

_PAGE = text(
    """
    SELECT id, created_at FROM uploads
    WHERE state = 'pending' AND created_at < :cutoff AND (created_at, id) > (:ts, :id)
    ORDER BY created_at, id LIMIT :n
    """
)
_EXPIRE = text(
    "UPDATE uploads SET state = 'expired', failure_reason = 'NOT_USED'"
    " WHERE id = ANY(CAST(:ids AS uuid[])) AND state = 'pending'"
)
_START = (dt.datetime.min.replace(tzinfo=dt.UTC), uuid.UUID(int=0))


@dataclass(frozen=True)
class Cleanup:
    """``expired`` uploads (raw deleted); ``failed``: left pending for the next run."""

    expired: int
    failed: int


async def cleanup_uploads(
    engine: AsyncEngine,
    store: ObjectStore,
    config: MediaConfig,
    *,
    now: dt.datetime | None = None,
    max_batches: int | None = None,
) -> Cleanup:
    """Expire uploads ``pending`` past MEDIA_PENDING_TTL_S, a batch at a time: delete raws, then
    mark ``expired``."""
    cutoff = (now or utcnow()) - config.pending_ttl
    after = _START
    expired = failed = batches = 0
    while max_batches is None or batches < max_batches:
        batches += 1
        async with engine.connect() as conn:
            rows = (
                await conn.execute(
                    _PAGE,
                    {"cutoff": cutoff, "ts": after[0], "id": after[1], "n": config.cleanup_batch},
                )
            ).all()
        if not rows:
            break
        after = (rows[-1].created_at, rows[-1].id)
        gone = []
        for r in rows:
            try:
                await store.delete_raw(raw_key(r.id))
            except Exception:
                failed += 1
                log.warning(
                    "upload %s: raw object not deleted; retried next run", r.id, exc_info=True
                )
                continue
            gone.append(r.id)
        if gone:
            async with engine.begin() as conn:
                await conn.execute(_EXPIRE, {"ids": gone})
            expired += len(gone)
        if len(rows) < config.cleanup_batch:
            break
    return Cleanup(expired=expired, failed=failed)
