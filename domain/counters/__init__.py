"""Exact, contention-free counters (docs/architecture/counters.md): a write adds to one
random shard of K in the transaction of the row it counts, a read sums at most K rows,
a compaction folds them into shard 0.
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
