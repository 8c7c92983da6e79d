"""Redis timelines: home feeds and authors' recent posts (docs/architecture/home-feed.md
"Home feed"). A sorted set under a ``{id}``-tagged key: member the post's UUIDv7 bytes,
score ``created_at`` in µs, so it orders as ``(created_at, id)``. A sentinel ``b""``
(score <= 0, :func:`sentinel_score`) marks it complete; writers never create one
(a missing or stale one is rebuilt from PostgreSQL via a ``:build`` key)."""

from domain.feed.timelines.entries import (
    SENTINEL,
    Entry,
    score_of,
    sentinel_parts,
    sentinel_score,
    time_of,
)

__all__ = ["SENTINEL", "Entry", "score_of", "sentinel_parts", "sentinel_score", "time_of"]
