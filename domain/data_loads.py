"""One row per bulk dataset loaded (graph, seeded posts); ``roost run`` decides from it whether to
load or seed."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Column, DateTime, Table, Text, func, text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import metadata

#: The real follow graph (``roost load-graph``).
GRAPH = "graph"
#: The posts seeded over the graph's users (``roost seed-posts``).
SEED_POSTS = "seed_posts"

data_loads = Table(
    "data_loads",
    metadata,
    Column("dataset", Text, primary_key=True),  # GRAPH, SEED_POSTS
    Column("source", Text, nullable=False),  # the file loaded, or what generated it
    Column("md5", Text, nullable=True),  # of the file, when there was one
    Column("summary", Text, nullable=False),  # what the load reported
    Column("loaded_at", DateTime(timezone=True), nullable=False, server_default=func.now()),
)


@dataclass(frozen=True)
class DataLoad:
    """A recorded load: ``dataset``, ``source`` (and ``md5``), its report, when (UTC)."""

    dataset: str
    source: str
    md5: str | None
    summary: str
    loaded_at: dt.datetime


async def recorded_load(engine: AsyncEngine, dataset: str) -> DataLoad | None:
    """The record of ``dataset`` (None if it was never loaded into this database)."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    "SELECT dataset, source, md5, summary, loaded_at FROM data_loads"
                    " WHERE dataset = :dataset"
                ),
                {"dataset": dataset},
            )
        ).first()
    return DataLoad(*row) if row is not None else None


async def record_load(
    engine: AsyncEngine, dataset: str, *, source: str, md5: str | None, summary: str
) -> None:
    """Record that ``dataset`` was loaded now (a second load of it replaces the record)."""
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO data_loads (dataset, source, md5, summary) VALUES"
                " (:dataset, :source, :md5, :summary)"
                " ON CONFLICT (dataset) DO UPDATE SET source = EXCLUDED.source,"
                " md5 = EXCLUDED.md5, summary = EXCLUDED.summary, loaded_at = now()"
            ),
            {"dataset": dataset, "source": source, "md5": md5, "summary": summary},
        )
