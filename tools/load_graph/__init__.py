"""Bulk load of a real follow graph (a SNAP edge list) into ``users`` and ``follows``.

The input is the format of the Stanford Network Analysis Project's directed graphs,
for example ``soc-Slashdot0902.txt.gz`` (``data/README.md``): optional gzip, ``#``
comment lines, then one edge a line, ``FromNodeId<TAB>ToNodeId`` (follower, followee),
lines ending LF or CRLF. Node ``N`` becomes the user ``sd<N>``.

The load is one transaction: the file is parsed first (nothing is written if it cannot
be read), then users and edges are COPYed into temporary staging tables and moved
into ``users`` and ``follows`` with ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``,
and the follower/following counters of exactly the inserted follows are added to
counter shard 0 in the same statement (docs/design.md "Data": counts are exact). No outbox
rows are written: a bulk import is not a stream of user actions to notify about.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.progress import Progress, no_progress
from domain.visibility.predicates import is_active
from tools.load_graph.load import (
    DISPLAY_NAME,
    HISTORY_START,
    SNAPSHOT,
    USERNAME_PREFIX,
    _write,
    user_created_at,
)
from tools.load_graph.parse import MALFORMED_EXAMPLES, MAX_NODE_ID, _parse
from tools.load_graph.report import LoadReport

__all__ = [
    "DISPLAY_NAME",
    "HISTORY_START",
    "MALFORMED_EXAMPLES",
    "MAX_NODE_ID",
    "SNAPSHOT",
    "USERNAME_PREFIX",
    "LoadReport",
    "imported_user_ids",
    "load_graph",
    "user_created_at",
]


async def load_graph(
    engine: AsyncEngine, path: Path, *, password_hash: str, progress: Progress = no_progress
) -> LoadReport:
    """Load the SNAP edge list at ``path`` into users and follows; return a LoadReport.

    Implements ``roost load-graph PATH`` over ``data/README.md``'s input (the Slashdot
    Zoo graph, SNAP ``soc-Slashdot0902``) and docs/seeds/followers-following.md's table:

    - Input: gzip or plain text; ``#`` comments, blank lines, LF or CRLF endings; one
      ``follower<TAB>followee`` pair of non-negative integer node ids (at most 2**63-1)
      a line. Self-loops, repeated edges and malformed lines are counted and skipped.
    - Node ``N`` -> user ``sd<N>``: display name ``Slashdot user N``, no email, status
      active, UUIDv7 id, ``password_hash`` (one already-hashed string shared by every
      imported user: hashing 82k passwords would take an hour), ``created_at`` from
      :func:`user_created_at`. A user ``sd<N>`` that already exists keeps its row and id.
    - Each new follow: UUIDv7 id, source ``import``, ``created_at`` between its users'
      sign-ups and the snapshot (2009-02-01), later lines newer. A pair that is already a
      live follow is left alone (``ON CONFLICT ... DO NOTHING``); a pair with a banned or
      deleted user, or a block between the users, is refused as follow_user refuses it.
    - Counters: the followers/following totals of exactly the inserted rows are added to
      counter shard 0, in the same transaction, so verify_follow_counts finds no drift.
    - Idempotent: a second run of the same file inserts nothing and changes no count
      (a pair unfollowed in between is followed again, as a re-follow would be).

    One transaction (all or nothing), ``synchronous_commit = off``; block/unblock wait
    for it. Then ``ANALYZE users, follows, counter_shards``. The edge list is held in
    memory as int64 arrays (~24 bytes an edge). The full Slashdot file takes 30-60 s
    on a 2-core machine. ``progress`` hears each phase (read file, stage users, insert
    users, stage follows, resolve pairs, insert follows, add counters, analyze).

    Raises ValueError (empty ``password_hash``), OSError/EOFError (missing, unreadable
    or corrupt file; nothing is written) and SQLAlchemy DBAPIError (database failure;
    the transaction rolls back).
    """
    if not password_hash:
        raise ValueError("password_hash must be a non-empty password hash")
    started = time.perf_counter()
    parsed = await asyncio.to_thread(_parse, Path(path), progress)
    parse_seconds = time.perf_counter() - started
    async with engine.begin() as conn:
        figures = await _write(conn, parsed, password_hash, progress)
    progress("analyze", 0, None)
    async with engine.begin() as conn:
        await conn.execute(text("ANALYZE users, follows, counter_shards"))
    pairs = figures["pairs"]
    return LoadReport(
        path=str(path),
        users_seen=len(parsed.nodes),
        users_inserted=figures["users_inserted"],
        edge_lines=parsed.edge_lines,
        self_loops_skipped=parsed.self_loops,
        duplicate_edges_skipped=len(parsed.src) - pairs,
        follows_inserted=figures["inserted"],
        follows_already_present=pairs
        - figures["inactive"]
        - figures["blocked"]
        - figures["inserted"],
        follows_refused_inactive=figures["inactive"],
        follows_refused_blocked=figures["blocked"],
        malformed_lines=parsed.malformed,
        comment_lines=parsed.comments,
        blank_lines=parsed.blanks,
        parse_seconds=parse_seconds,
        seconds=time.perf_counter() - started,
        malformed_examples=tuple(parsed.examples),
    )


async def imported_user_ids(engine: AsyncEngine) -> list[uuid.UUID]:
    """The active users a graph load created (``sd<N>``, signed up before the snapshot),
    in id order: never an account made by hand, even one named ``sd<N>``."""
    async with engine.connect() as conn:
        rows = await conn.execute(
            text(
                f"SELECT id FROM users WHERE {is_active()} AND created_at < :snapshot"
                " AND username ~ :pattern ORDER BY id"
            ),
            {"snapshot": SNAPSHOT, "pattern": f"^{USERNAME_PREFIX}[0-9]+$"},
        )
        return list(rows.scalars())
