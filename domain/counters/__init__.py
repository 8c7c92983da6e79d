"""Exact, contention-free counters (docs/architecture/counters.md): writes add to a random shard of
K, reads sum at most K rows."""

from domain.counters.store import (
    Delta,
    add_deltas,
    compact,
    read_counts,
    shard_rows,
    upsert_rows_sql,
)

__all__ = ["Delta", "add_deltas", "compact", "read_counts", "shard_rows", "upsert_rows_sql"]
