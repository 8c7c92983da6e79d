"""The ``counter_shards`` table."""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, PrimaryKeyConstraint, SmallInteger, Table, Text, Uuid

from domain.db import metadata

#: Counter kinds in use. ``followers``/``following`` are per user.
KINDS = ("followers", "following", "posts", "likes", "comments")

counter_shards = Table(
    "counter_shards",
    metadata,
    Column("entity_id", Uuid, nullable=False),  # the user (or later post) being counted
    Column("kind", Text, nullable=False),
    Column("shard", SmallInteger, nullable=False),  # 0 .. K-1; 0 also holds compacted totals
    # A shard may go negative; only the sum over all shards is meaningful (and exact).
    Column("value", BigInteger, nullable=False),
    PrimaryKeyConstraint("entity_id", "kind", "shard"),
)
