"""Bulk load of a real follow graph (a SNAP edge list) into ``users`` and ``follows``.

The input is the format of the Stanford Network Analysis Project's directed graphs,
for example ``soc-Slashdot0902.txt.gz`` (shared/data/README.md): optional gzip, ``#``
comment lines, then one edge a line, ``FromNodeId<TAB>ToNodeId`` (follower, followee),
lines ending LF or CRLF. Node ``N`` becomes the user ``sd<N>``.

The load is one transaction: the file is parsed first (nothing is written if it cannot
be read), then users and edges are COPYed into temporary staging tables and moved
into ``users`` and ``follows`` with ``INSERT ... SELECT ... ON CONFLICT DO NOTHING``,
and the follower/following counters of exactly the inserted follows are added to
counter shard 0 in the same statement (design.md "Data": counts are exact). No outbox
rows are written: a bulk import is not a stream of user actions to notify about.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gzip
import logging
import time
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.db import new_id

log = logging.getLogger(__name__)

#: Username of node ``N``: ``sd<N>`` (fits ^[a-z0-9._]{3,30}$ for every accepted N).
USERNAME_PREFIX = "sd"
#: Display name of node ``N``.
DISPLAY_NAME = "Slashdot user {}"
#: Imported users are created between Slashdot's launch (September 1997) and ...
HISTORY_START = dt.datetime(1997, 9, 1, tzinfo=dt.UTC)
#: ... the snapshot (February 2009); imported follows are dated before this instant too.
SNAPSHOT = dt.datetime(2009, 2, 1, tzinfo=dt.UTC)
#: Largest node id accepted (staged as bigint); larger ids are malformed lines.
MAX_NODE_ID = 2**63 - 1
#: How many malformed lines the report quotes.
MALFORMED_EXAMPLES = 5

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_MASK64 = 2**64 - 1
_HISTORY_SPAN_US = (SNAPSHOT - dt.timedelta(days=1) - HISTORY_START) // dt.timedelta(microseconds=1)


@dataclass(frozen=True)
class LoadReport:
    """What one :func:`load_graph` run read, wrote and skipped.

    Every edge line ends in exactly one bucket::

        edge_lines == self_loops_skipped + duplicate_edges_skipped + follows_inserted
                      + follows_already_present + follows_refused_inactive
                      + follows_refused_blocked

    Malformed, comment and blank lines are not edge lines. Times are wall-clock seconds.
    """

    path: str
    users_seen: int  # distinct node ids on edge lines (self-loops included)
    users_inserted: int  # new ``sd<N>`` rows; the others already existed and kept their id
    edge_lines: int  # well-formed ``from<TAB>to`` lines
    self_loops_skipped: int  # edge lines with from == to (Roost forbids self-follows)
    duplicate_edges_skipped: int  # repeats of an earlier edge line of the same file
    follows_inserted: int  # new live follows, counted into the counters
    follows_already_present: int  # the pair was already a live follow: left untouched
    follows_refused_inactive: int  # a side is an existing banned or deleted user
    follows_refused_blocked: int  # a block exists between the two users (either way)
    malformed_lines: int  # neither comment, blank nor two non-negative integers
    comment_lines: int
    blank_lines: int
    parse_seconds: float
    seconds: float  # the whole run: parse, database writes, commit and ANALYZE
    malformed_examples: tuple[tuple[int, str], ...] = field(default=())  # (line number, text)

    @property
    def users_already_present(self) -> int:
        """Users of the file that existed before this run (``users_seen - users_inserted``)."""
        return self.users_seen - self.users_inserted

    def summary(self) -> str:
        """Return a human, multi-line account of the run (what was loaded, skipped, time)."""
        db_seconds = self.seconds - self.parse_seconds
        lines = [
            f"Loaded {self.path} in {self.seconds:.1f} s "
            f"(parse {self.parse_seconds:.1f} s, database {db_seconds:.1f} s)",
            f"  lines:   {self.edge_lines:,} edges, {self.comment_lines:,} comments, "
            f"{self.blank_lines:,} blank, {self.malformed_lines:,} malformed",
            f"  users:   {self.users_seen:,} in the file: {self.users_inserted:,} new, "
            f"{self.users_already_present:,} already present",
            f"  follows: {self.follows_inserted:,} new, "
            f"{self.follows_already_present:,} already present",
            f"  skipped: {self.self_loops_skipped:,} self-loops, "
            f"{self.duplicate_edges_skipped:,} duplicate edges, "
            f"{self.malformed_lines:,} malformed lines, "
            f"{self.follows_refused_inactive:,} with a banned/deleted user, "
            f"{self.follows_refused_blocked:,} across a block",
        ]
        for line_no, content in self.malformed_examples:
            lines.append(f"  malformed line {line_no}: {content!r}")
        if self.malformed_lines > len(self.malformed_examples):
            lines.append(f"  ... and {self.malformed_lines - len(self.malformed_examples):,} more")
        return "\n".join(lines)


@dataclass
class _Parsed:
    """An edge list in memory: parallel arrays of the non-self-loop edges."""

    src: array = field(default_factory=lambda: array("q"))  # follower node ids
    dst: array = field(default_factory=lambda: array("q"))  # followee node ids
    pos: array = field(default_factory=lambda: array("q"))  # 1-based index among edge lines
    nodes: set[int] = field(default_factory=set)
    edge_lines: int = 0
    self_loops: int = 0
    malformed: int = 0
    comments: int = 0
    blanks: int = 0
    examples: list[tuple[int, str]] = field(default_factory=list)


def _parse(path: Path) -> _Parsed:
    """Read a SNAP edge list (gzip detected by its magic bytes, else plain text).

    Raises OSError (missing or unreadable file, truncated or corrupt gzip) and EOFError.
    """
    with path.open("rb") as probe:
        gz = probe.read(2) == _GZIP_MAGIC
    out = _Parsed()
    src_append, dst_append, pos_append = out.src.append, out.dst.append, out.pos.append
    add_node = out.nodes.add
    edge_lines = self_loops = 0
    with gzip.open(path, "rb") if gz else path.open("rb") as f:
        for line_no, raw in enumerate(f, 1):
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            fields = raw.split()
            if not fields:
                out.blanks += 1
                continue
            a, *rest = fields
            if a[:1] == b"#":
                out.comments += 1
                continue
            if len(rest) != 1 or not a.isdigit() or not rest[0].isdigit():
                _malformed(out, line_no, raw)
                continue
            follower, followee = int(a), int(rest[0])
            if follower > MAX_NODE_ID or followee > MAX_NODE_ID:
                _malformed(out, line_no, raw)
                continue
            edge_lines += 1
            add_node(follower)
            add_node(followee)
            if follower == followee:
                self_loops += 1
                continue
            src_append(follower)
            dst_append(followee)
            pos_append(edge_lines)
    out.edge_lines, out.self_loops = edge_lines, self_loops
    return out


def _malformed(out: _Parsed, line_no: int, raw: bytes) -> None:
    out.malformed += 1
    if len(out.examples) < MALFORMED_EXAMPLES:
        out.examples.append((line_no, raw[:80].decode("utf-8", "replace").rstrip("\r\n")))


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
    """
    CREATE TEMP TABLE load_graph_map ON COMMIT DROP AS
    SELECT s.node, u.id, u.status = 'active' AS active, u.created_at
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
_INSERT_FOLLOWS = text(
    """
    WITH ins AS (
        INSERT INTO follows (id, follower_id, followee_id, source, created_at)
        SELECT p.id, p.follower_id, p.followee_id, 'import',
               p.since + (greatest(CASE WHEN p.since < CAST(:snapshot AS timestamptz)
                                        THEN CAST(:snapshot AS timestamptz)
                                        ELSE statement_timestamp() END, p.since) - p.since)
                         * ((p.pos - 0.5) / CAST(:edge_lines AS double precision))
        FROM load_graph_pairs p
        WHERE p.active AND NOT p.blocked
        ORDER BY p.follower_id, p.followee_id
        ON CONFLICT (follower_id, followee_id) WHERE deleted_at IS NULL DO NOTHING
        RETURNING follower_id, followee_id
    ), totals AS (
        SELECT followee_id AS entity_id, 'followers' AS kind, count(*) AS n
        FROM ins GROUP BY followee_id
        UNION ALL
        SELECT follower_id, 'following', count(*) FROM ins GROUP BY follower_id
    ), bumped AS (
        -- Shard 0, locked in (entity_id, kind) order like every counter writer.
        INSERT INTO counter_shards (entity_id, kind, shard, value)
        SELECT entity_id, kind, 0, n FROM totals ORDER BY entity_id, kind
        ON CONFLICT (entity_id, kind, shard)
        DO UPDATE SET value = counter_shards.value + EXCLUDED.value
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM ins) AS inserted, (SELECT count(*) FROM bumped) AS counters
    """
)


class _Lap:
    """Logs the seconds each phase of a load took (DEBUG level)."""

    def __init__(self) -> None:
        self.last = time.perf_counter()

    def __call__(self, phase: str) -> None:
        now = time.perf_counter()
        log.debug("load_graph: %s took %.2f s", phase, now - self.last)
        self.last = now


def _user_records(nodes: list[int]) -> Iterator[tuple]:
    for node in nodes:
        yield (
            node,
            new_id(),
            f"{USERNAME_PREFIX}{node}",
            DISPLAY_NAME.format(node),
            user_created_at(node),
        )


def _edge_records(parsed: _Parsed) -> Iterator[tuple]:
    for pos, src, dst in zip(parsed.pos, parsed.src, parsed.dst, strict=True):
        yield (pos, src, dst, new_id())


async def _write(conn: AsyncConnection, parsed: _Parsed, password_hash: str) -> dict[str, int]:
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
    raw = await conn.get_raw_connection()
    apg = raw.driver_connection
    lap = _Lap()
    await apg.copy_records_to_table(
        "load_graph_users",
        records=_user_records(sorted(parsed.nodes)),
        columns=["node", "id", "username", "display_name", "created_at"],
    )
    lap("copy users")
    users_inserted = await conn.scalar(_INSERT_USERS, {"password_hash": password_hash})
    lap("insert users")
    await apg.copy_records_to_table(
        "load_graph_edges",
        records=_edge_records(parsed),
        columns=["pos", "src", "dst", "id"],
    )
    lap("copy edges")
    for stmt in _MAP:
        await conn.execute(text(stmt))
    await conn.execute(text(_PAIRS))
    stats = (await conn.execute(_PAIR_STATS)).one()
    lap("resolve pairs")
    inserted = 0
    if stats.pairs - stats.inactive - stats.blocked > 0:
        row = (
            await conn.execute(
                _INSERT_FOLLOWS,
                {"snapshot": SNAPSHOT, "edge_lines": max(parsed.edge_lines, 1)},
            )
        ).one()
        inserted = int(row.inserted)
    lap("insert follows and counters")
    return {
        "users_inserted": int(users_inserted or 0),
        "pairs": int(stats.pairs),
        "inactive": int(stats.inactive),
        "blocked": int(stats.blocked),
        "inserted": inserted,
    }


async def load_graph(engine: AsyncEngine, path: Path, *, password_hash: str) -> LoadReport:
    """Load the SNAP edge list at ``path`` into users and follows; return a LoadReport.

    Implements ``roost load-graph PATH`` over shared/data/README.md's input (the Slashdot
    Zoo graph, SNAP ``soc-Slashdot0902``) and seeds/followers-following.md's table:

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
    memory as int64 arrays (~24 bytes an edge). The full Slashdot file takes ~30 s here.

    Raises ValueError (empty ``password_hash``), OSError/EOFError (missing, unreadable
    or corrupt file; nothing is written) and SQLAlchemy DBAPIError (database failure;
    the transaction rolls back).
    """
    if not password_hash:
        raise ValueError("password_hash must be a non-empty password hash")
    started = time.perf_counter()
    parsed = await asyncio.to_thread(_parse, Path(path))
    parse_seconds = time.perf_counter() - started
    async with engine.begin() as conn:
        figures = await _write(conn, parsed, password_hash)
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
