"""Write a parsed edge list in the caller's transaction: COPY into staging tables, then
``INSERT ... SELECT`` into ``users``, ``follows`` and counter shard 0."""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Iterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from adapters.postgres.driver import asyncpg_connection
from domain.db import new_id
from domain.progress import Progress, counted, no_progress
from domain.visibility.predicates import is_active, is_live
from tools.load_graph.parse import _Parsed

log = logging.getLogger(__name__)

#: Username of node ``N``: ``sd<N>`` (fits ^[a-z0-9._]{3,30}$ for every accepted N).
USERNAME_PREFIX = "sd"
#: Display name of node ``N``.
DISPLAY_NAME = "Slashdot user {}"
#: Imported users are created between Slashdot's launch (September 1997) and ...
HISTORY_START = dt.datetime(1997, 9, 1, tzinfo=dt.UTC)
#: ... the snapshot (February 2009); imported follows are dated before this instant too.
SNAPSHOT = dt.datetime(2009, 2, 1, tzinfo=dt.UTC)

_MASK64 = 2**64 - 1
_HISTORY_SPAN_US = (SNAPSHOT - dt.timedelta(days=1) - HISTORY_START) // dt.timedelta(microseconds=1)


def user_created_at(node: int) -> dt.datetime:
    """Return the deterministic sign-up time of node ``node``: a timestamptz (UTC,
    microseconds) spread uniformly over [1997-09-01, 2009-01-31) by a 64-bit hash of the
    node id (splitmix64's finaliser), so the same node always gets the same instant."""
    h = (node * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) & _MASK64
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & _MASK64
    h ^= h >> 31
    return HISTORY_START + dt.timedelta(microseconds=(h * _HISTORY_SPAN_US) >> 64)


_STAGE = (
    """
    CREATE TEMP TABLE load_graph_users (
        node bigint NOT NULL, id uuid NOT NULL, username text NOT NULL,
        display_name text NOT NULL, created_at timestamptz NOT NULL
    ) ON COMMIT DROP
    """,
    """
    CREATE TEMP TABLE load_graph_edges (
        pos bigint NOT NULL, src bigint NOT NULL, dst bigint NOT NULL, id uuid NOT NULL
    ) ON COMMIT DROP
    """,
)

_INSERT_USERS = text(
    """
    WITH ins AS (
        INSERT INTO users (id, username, email, display_name, password_hash, status, created_at)
        SELECT id, username, NULL, display_name, :password_hash, 'active', created_at
        FROM load_graph_users ORDER BY node
        ON CONFLICT (username) DO NOTHING
        RETURNING 1
    )
    SELECT count(*) FROM ins
    """
)

# node -> the user it is now (new or pre-existing), with what the follow rules need.
_MAP = (
    f"""
    CREATE TEMP TABLE load_graph_map ON COMMIT DROP AS
    SELECT s.node, u.id, {is_active("u")} AS active, u.created_at
    FROM load_graph_users s JOIN users u ON u.username = s.username
    """,
    "ALTER TABLE load_graph_map ADD PRIMARY KEY (node)",
    "ANALYZE load_graph_map",
    "ANALYZE load_graph_edges",
)

# One row per distinct (follower, followee) pair of the file, its first line wins.
_PAIRS = """
    CREATE TEMP TABLE load_graph_pairs ON COMMIT DROP AS
    WITH blocked AS (
        SELECT blocker_id AS x, blocked_id AS y FROM blocks
        UNION
        SELECT blocked_id, blocker_id FROM blocks
    )
    SELECT DISTINCT ON (e.src, e.dst)
           e.id, e.pos, a.id AS follower_id, b.id AS followee_id,
           a.active AND b.active AS active,
           k.x IS NOT NULL AS blocked,
           greatest(a.created_at, b.created_at) AS since
    FROM load_graph_edges e
    JOIN load_graph_map a ON a.node = e.src
    JOIN load_graph_map b ON b.node = e.dst
    LEFT JOIN blocked k ON k.x = a.id AND k.y = b.id
    ORDER BY e.src, e.dst, e.pos
"""

# The insertable pairs numbered in the order they are inserted, so the insert runs in
# batches (progress, and no single half-minute statement).
_NUMBER = (
    """
    CREATE TEMP TABLE load_graph_todo ON COMMIT DROP AS
    SELECT row_number() OVER (ORDER BY follower_id, followee_id) AS seq,
           id, pos, follower_id, followee_id, since
    FROM load_graph_pairs WHERE active AND NOT blocked
    """,
    "ALTER TABLE load_graph_todo ADD PRIMARY KEY (seq)",
    "CREATE TEMP TABLE load_graph_inserted (follower_id uuid, followee_id uuid) ON COMMIT DROP",
)

_PAIR_STATS = text(
    """
    SELECT count(*) AS pairs,
           count(*) FILTER (WHERE NOT active) AS inactive,
           count(*) FILTER (WHERE active AND blocked) AS blocked
    FROM load_graph_pairs
    """
)

# A follow is dated between the later of its two users' sign-ups and the snapshot
# (or, for a pre-existing user who signed up after it, the load itself), at the
# fraction of the file its line sits at: later lines are newer, and few share an instant.
# One batch of ``seq`` numbers per statement; the inserted pairs are kept for the counters.
_INSERT_FOLLOWS = text(
    f"""
    WITH ins AS (
        INSERT INTO follows (id, follower_id, followee_id, source, created_at)
        SELECT p.id, p.follower_id, p.followee_id, 'import',
               p.since + (greatest(CASE WHEN p.since < CAST(:snapshot AS timestamptz)
                                        THEN CAST(:snapshot AS timestamptz)
                                        ELSE statement_timestamp() END, p.since) - p.since)
                         * ((p.pos - 0.5) / CAST(:edge_lines AS double precision))
        FROM load_graph_todo p
        WHERE p.seq > :lo AND p.seq <= :hi
        ORDER BY p.seq
        ON CONFLICT (follower_id, followee_id) WHERE {is_live()} DO NOTHING
        RETURNING follower_id, followee_id
    )
    INSERT INTO load_graph_inserted SELECT follower_id, followee_id FROM ins
    """
)

# The followers/following totals of exactly the inserted follows, onto shard 0.
_ADD_COUNTERS = text(
    """
    WITH totals AS (
        SELECT followee_id AS entity_id, 'followers' AS kind, count(*) AS n
        FROM load_graph_inserted GROUP BY followee_id
        UNION ALL
        SELECT follower_id, 'following', count(*) FROM load_graph_inserted GROUP BY follower_id
    )
    -- Shard 0, locked in (entity_id, kind) order like every counter writer.
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT entity_id, kind, 0, n FROM totals ORDER BY entity_id, kind
    ON CONFLICT (entity_id, kind, shard)
    DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """
)

# People search's ranking signal (user_search.followers) of the followees, in step with
# their counters: the worker's refresh then finds nothing to write.
_ADD_SEARCH_FOLLOWERS = text(
    """
    UPDATE user_search s SET followers = s.followers + t.n
    FROM (SELECT followee_id, count(*) AS n FROM load_graph_inserted GROUP BY followee_id) t
    WHERE s.user_id = t.followee_id
    """
)

#: Follows inserted per statement.
FOLLOW_BATCH = 50_000


class _Lap:
    """Logs the seconds each phase of a load took (DEBUG level)."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self, phase: str) -> None:
        now = time.perf_counter()
        log.debug("load_graph: %s took %.2f s", phase, now - self.last)
        self.last = now


def _user_records(nodes: list[int]) -> Iterator[tuple[object, ...]]:
    for node in nodes:
        yield (
            node,
            new_id(),
            f"{USERNAME_PREFIX}{node}",
            DISPLAY_NAME.format(node),
            user_created_at(node),
        )


def _edge_records(parsed: _Parsed) -> Iterator[tuple[object, ...]]:
    for pos, src, dst in zip(parsed.pos, parsed.src, parsed.dst, strict=True):
        yield (pos, src, dst, new_id())


async def _write(
    conn: AsyncConnection, parsed: _Parsed, password_hash: str, progress: Progress = no_progress
) -> dict[str, int]:
    """Stage and insert in the caller's transaction; return the database-side figures."""
    for setting in (
        "SET LOCAL synchronous_commit = off",  # durability of a re-runnable import: not needed
        "SET LOCAL statement_timeout = 0",
        "SET LOCAL work_mem = '256MB'",  # the DISTINCT ON and ORDER BY sorts stay in memory
    ):
        await conn.execute(text(setting))
    # Block and unblock wait until the load commits, so no follow can be inserted
    # beside a block that commits meanwhile (block_user ends live follows only).
    await conn.execute(text("LOCK TABLE blocks IN SHARE MODE"))
    for ddl in _STAGE:
        await conn.execute(text(ddl))
    # The transaction is open on this connection: the COPYs below run inside it.
    apg = await asyncpg_connection(conn)
    lap = _Lap()
    nodes = sorted(parsed.nodes)
    await apg.copy_records_to_table(
        "load_graph_users",
        records=counted(_user_records(nodes), progress, "stage users", len(nodes)),
        columns=["node", "id", "username", "display_name", "created_at"],
    )
    lap("copy users")
    progress("insert users", 0, None)
    users_inserted = await conn.scalar(_INSERT_USERS, {"password_hash": password_hash})
    lap("insert users")
    await apg.copy_records_to_table(
        "load_graph_edges",
        records=counted(_edge_records(parsed), progress, "stage follows", len(parsed.src)),
        columns=["pos", "src", "dst", "id"],
    )
    lap("copy edges")
    progress("resolve pairs", 0, None)
    for stmt in _MAP:
        await conn.execute(text(stmt))
    await conn.execute(text(_PAIRS))
    stats = (await conn.execute(_PAIR_STATS)).one()
    lap("resolve pairs")
    todo = int(stats.pairs - stats.inactive - stats.blocked)
    inserted = 0
    if todo > 0:
        for stmt in _NUMBER:
            await conn.execute(text(stmt))
        args = {"snapshot": SNAPSHOT, "edge_lines": max(parsed.edge_lines, 1)}
        for lo in range(0, todo, FOLLOW_BATCH):
            progress("insert follows", lo, todo)
            await conn.execute(_INSERT_FOLLOWS, {**args, "lo": lo, "hi": lo + FOLLOW_BATCH})
        progress("insert follows", todo, todo)
        inserted = int(await conn.scalar(text("SELECT count(*) FROM load_graph_inserted")))
        progress("add counters", 0, None)
        await conn.execute(_ADD_COUNTERS)
        await conn.execute(_ADD_SEARCH_FOLLOWERS)
    lap("insert follows and counters")
    return {
        "users_inserted": int(users_inserted or 0),
        "pairs": int(stats.pairs),
        "inactive": int(stats.inactive),
        "blocked": int(stats.blocked),
        "inserted": inserted,
    }
