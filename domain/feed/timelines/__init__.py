"""Redis timelines: the per-user home feeds and the per-author recent-posts stores
(docs/architecture/home-feed.md "Home feed": Timelines, Windows, Lost writes).

A timeline is a sorted set under a ``{id}``-hash-tagged key: member the post's UUIDv7
as 16 bytes, score its ``created_at`` in microseconds, so ``(score, member)`` orders as
``(created_at, id)`` does in SQL. A sentinel member ``b""`` (score <= 0) marks a key
complete for its window and carries whether it is whole and the Redis run that built it
(:func:`sentinel_score`). Writers never create a timeline; a missing or stale one is
rebuilt from PostgreSQL through a ``:build`` key (port: :class:`domain.feed.ports.Timelines`).
"""

from domain.feed.timelines.entries import (
    SENTINEL,
    Entry,
    score_of,
    sentinel_parts,
    sentinel_score,
    time_of,
)

__all__ = ["SENTINEL", "Entry", "score_of", "sentinel_parts", "sentinel_score", "time_of"]
