"""Exact, contention-free counters: K shard rows per (entity, kind), summed at read.

docs/design.md "Data": a write adds to one random shard of K in the same transaction
as the row it counts; a read sums at most K rows through the primary key; a
compaction job folds the shards back into shard 0. This is the per-node shard
counter of docs/seeds/follower-count-crdt-issue.md with the shard chosen per write
instead of per process, so one process's hot row cannot serialise its writers.
"""

from domain.counters.store import (
    Delta,
    add_deltas,
    compact,
    read_counts,
    shard_rows,
    upsert_rows_sql,
)

__all__ = ["Delta", "add_deltas", "compact", "read_counts", "shard_rows", "upsert_rows_sql"]
