"""``load_graph``: the bulk loader of a SNAP follow graph, against real PostgreSQL.

Tests share one database per run, so each test uses node ids of its own (900000+,
far above the Slashdot file's 0..82167) and asserts on its own users, never on
global totals; the zero-drift check is global because drift anywhere is a bug.
"""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import subprocess
import uuid
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from app.settings import DEFAULT_GRAPH_MD5, DEFAULT_GRAPH_PATH
from domain.db import new_id
from domain.social.follow_user import follow_user
from domain.social.queries import follow_counts
from domain.social.verify_counts import verify_follow_counts
from tools.load_graph import (
    HISTORY_START,
    SNAPSHOT,
    LoadReport,
    load_graph,
    user_created_at,
)

# Any non-empty string does: the loader stores it as given (hashing is the caller's job).
HASH = "$argon2id$v=19$m=65536,t=3,p=4$bG9hZGVydGVzdA$bG9hZGVydGVzdGhhc2g"
# The real graph shipped in the repository (data/README.md), as `roost run` loads it.
SLASHDOT = DEFAULT_GRAPH_PATH


async def _ids(engine: AsyncEngine, nodes: list[int]) -> dict[int, uuid.UUID]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT username, id FROM users WHERE username = ANY(CAST(:u AS text[]))"),
            {"u": [f"sd{n}" for n in nodes]},
        )
        return {int(name[2:]): uid for name, uid in rows}


async def _counts(engine: AsyncEngine, ids: dict[int, uuid.UUID]) -> dict[int, tuple[int, int]]:
    async with engine.connect() as conn:
        by_id = await follow_counts(conn, list(ids.values()))
    return {n: by_id[uid] for n, uid in ids.items()}


def _buckets(r: LoadReport) -> int:
    return (
        r.self_loops_skipped
        + r.duplicate_edges_skipped
        + r.follows_inserted
        + r.follows_already_present
        + r.follows_refused_inactive
        + r.follows_refused_blocked
    )


async def test_load_small_gzip_edge_list(engine: AsyncEngine, tmp_path: Path) -> None:
    a, b, c, d, e = 900001, 900002, 900003, 900004, 900005
    lines = [
        "# Directed graph: a synthetic Slashdot-like sample",
        f"{a}\t{b}",
        f"{a}\t{c}",
        f"{b}\t{a}",
        f"{c}\t{c}",  # self-loop
        f"{a}\t{b}",  # duplicate of line 2
        "",  # blank
        f"{d}\tabc",  # malformed: not a number
        f"{e}\t{e}",  # self-loop: e exists only here, and still becomes a user
        f"{c}\t{a}",
        f"{d}\t{a}",
        "1\t2\t3",  # malformed: three fields
    ]
    path = tmp_path / "sample.txt.gz"
    path.write_bytes(gzip.compress(("\r\n".join(lines) + "\r\n").encode()))

    report = await load_graph(engine, path, password_hash=HASH)

    assert report.users_seen == 5
    assert report.users_inserted == 5
    assert report.edge_lines == 8
    assert report.self_loops_skipped == 2
    assert report.duplicate_edges_skipped == 1
    assert report.follows_inserted == 5
    assert report.follows_already_present == 0
    assert report.follows_refused_inactive == report.follows_refused_blocked == 0
    assert report.malformed_lines == 2
    assert [n for n, _ in report.malformed_examples] == [8, 12]
    assert report.malformed_examples[0][1] == f"{d}\tabc"
    assert (report.comment_lines, report.blank_lines) == (1, 1)
    assert _buckets(report) == report.edge_lines
    assert 0 <= report.parse_seconds <= report.seconds
    summary = report.summary()
    assert "5 new" in summary and "2 self-loops" in summary and "1 duplicate" in summary
    assert "malformed line 8" in summary and str(path) in summary

    ids = await _ids(engine, [a, b, c, d, e])
    assert len(ids) == 5
    async with engine.connect() as conn:
        users = (
            await conn.execute(
                text(
                    "SELECT username, display_name, email, password_hash, status, created_at"
                    " FROM users WHERE id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"ids": list(ids.values())},
            )
        ).all()
        follows = (
            await conn.execute(
                text(
                    "SELECT f.follower_id, f.followee_id, f.source, f.created_at,"
                    " greatest(x.created_at, y.created_at) AS since"
                    " FROM follows f JOIN users x ON x.id = f.follower_id"
                    " JOIN users y ON y.id = f.followee_id"
                    " WHERE f.follower_id = ANY(CAST(:ids AS uuid[])) AND f.deleted_at IS NULL"
                ),
                {"ids": list(ids.values())},
            )
        ).all()
    for u in users:
        node = int(u.username[2:])
        assert u.display_name == f"Slashdot user {node}"
        assert u.email is None and u.password_hash == HASH and u.status == "active"
        assert u.created_at == user_created_at(node)
        assert HISTORY_START <= u.created_at < SNAPSHOT
    node_of = {uid: n for n, uid in ids.items()}
    assert sorted((node_of[f.follower_id], node_of[f.followee_id]) for f in follows) == sorted(
        [(a, b), (a, c), (b, a), (c, a), (d, a)]
    )
    assert all(f.source == "import" for f in follows)
    assert all(f.since <= f.created_at < SNAPSHOT for f in follows)
    assert len({f.created_at for f in follows}) == len(follows)

    assert await _counts(engine, ids) == {a: (3, 2), b: (1, 1), c: (1, 1), d: (0, 1), e: (0, 0)}
    assert (await verify_follow_counts(engine)).drift == []

    again = await load_graph(engine, path, password_hash=HASH)
    assert (again.users_inserted, again.follows_inserted) == (0, 0)
    assert again.follows_already_present == 5
    assert again.users_already_present == 5
    assert "0 new" in again.summary()
    assert await _ids(engine, [a, b, c, d, e]) == ids
    assert await _counts(engine, ids) == {a: (3, 2), b: (1, 1), c: (1, 1), d: (0, 1), e: (0, 0)}
    assert (await verify_follow_counts(engine)).drift == []


async def test_load_respects_existing_users_follows_status_and_blocks(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    p1, p2, p3, p4, new = 910001, 910002, 910003, 910004, 910005
    pre = {p1: new_id(), p2: new_id(), p3: new_id(), p4: new_id()}
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO users (id, username, display_name, password_hash, status)"
                " VALUES (:id, :username, 'Already here', 'x', :status)"
            ),
            [
                {"id": uid, "username": f"sd{n}", "status": "banned" if n == p2 else "active"}
                for n, uid in pre.items()
            ],
        )
        await conn.execute(
            text("INSERT INTO blocks (blocker_id, blocked_id) VALUES (:a, :b)"),
            {"a": pre[p3], "b": pre[p4]},
        )
    await follow_user(engine, pre[p1], pre[p3], counter_shards=4)

    path = tmp_path / "plain.txt"  # not gzipped, LF endings
    path.write_text(
        "\n".join(
            [
                f"{p1}\t{p3}",  # already a live follow
                f"{p1}\t{new}",
                f"{new}\t{p1}",
                f"{p2}\t{p1}",  # the follower is banned
                f"{new}\t{p2}",  # the followee is banned
                f"{p4}\t{p3}",  # p3 blocked p4
                f"{p3}\t{p4}",  # ... which refuses both directions
                f"{new}\t{p3}",
            ]
        )
        + "\n"
    )

    report = await load_graph(engine, path, password_hash=HASH)

    assert (report.users_seen, report.users_inserted, report.users_already_present) == (5, 1, 4)
    assert report.edge_lines == 8
    assert report.follows_inserted == 3
    assert report.follows_already_present == 1
    assert report.follows_refused_inactive == 2
    assert report.follows_refused_blocked == 2
    assert report.self_loops_skipped == report.duplicate_edges_skipped == 0
    assert report.malformed_lines == report.comment_lines == report.blank_lines == 0
    assert _buckets(report) == report.edge_lines

    ids = await _ids(engine, [p1, p2, p3, p4, new])
    assert {n: ids[n] for n in pre} == pre  # existing users keep their ids ...
    async with engine.connect() as conn:
        names = (
            await conn.execute(
                text("SELECT display_name FROM users WHERE id = ANY(CAST(:ids AS uuid[]))"),
                {"ids": list(pre.values())},
            )
        ).scalars()
        assert set(names) == {"Already here"}  # ... and their rows
        late = await conn.scalar(
            text(
                "SELECT min(f.created_at) FROM follows f WHERE f.source = 'import'"
                " AND f.deleted_at IS NULL AND (f.follower_id = :p1 OR f.followee_id = :p1)"
            ),
            {"p1": pre[p1]},
        )
    # p1 signed up after the snapshot (just now), so its imported follows are dated
    # after its sign-up, not in 2009.
    assert late > SNAPSHOT and late <= dt.datetime.now(dt.UTC)

    expected = {p1: (1, 2), p2: (0, 0), p3: (2, 0), p4: (0, 0), new: (1, 2)}
    assert await _counts(engine, ids) == expected
    assert (await verify_follow_counts(engine)).drift == []

    again = await load_graph(engine, path, password_hash=HASH)
    assert (again.users_inserted, again.follows_inserted, again.follows_already_present) == (
        0,
        0,
        4,
    )
    assert await _counts(engine, ids) == expected
    assert (await verify_follow_counts(engine)).drift == []


async def test_load_refuses_missing_file_and_empty_hash(
    engine: AsyncEngine, tmp_path: Path
) -> None:
    with pytest.raises(FileNotFoundError):
        await load_graph(engine, tmp_path / "nope.txt.gz", password_hash=HASH)
    (tmp_path / "one.txt").write_text("920001\t920002\n")
    with pytest.raises(ValueError):
        await load_graph(engine, tmp_path / "one.txt", password_hash="")
    truncated = tmp_path / "truncated.txt.gz"
    truncated.write_bytes(gzip.compress(b"920001\t920002\n" * 1000)[:-20])
    with pytest.raises(EOFError):
        await load_graph(engine, truncated, password_hash=HASH)
    assert await _ids(engine, [920001, 920002]) == {}  # nothing was written


def test_the_real_graph_ships_in_the_repository() -> None:
    """data/soc-Slashdot0902.txt.gz is committed as itself (not ignored, not a Git LFS
    pointer) and is the file data/README.md describes."""
    assert SLASHDOT.is_file(), f"{SLASHDOT} is missing: the clone lost data/"
    assert hashlib.md5(SLASHDOT.read_bytes()).hexdigest() == DEFAULT_GRAPH_MD5
    assert DEFAULT_GRAPH_MD5 in (SLASHDOT.parent / "README.md").read_text()
    repo = SLASHDOT.parents[1]
    if (repo / ".git").exists():
        rel = str(SLASHDOT.relative_to(repo))
        tracked = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "--error-unmatch", rel], capture_output=True
        )
        assert tracked.returncode == 0, f"{rel} is not tracked by git"
        attrs = subprocess.run(
            ["git", "-C", str(repo), "check-attr", "filter", "--", rel],
            capture_output=True,
            text=True,
        ).stdout
        assert "lfs" not in attrs, attrs


@pytest.mark.slow
async def test_load_real_slashdot_graph(engine: AsyncEngine) -> None:
    steps: list[str] = []

    def progress(step: str, done: int, total: int | None, unit: str = "rows") -> None:
        if not steps or steps[-1] != step:
            steps.append(step)
        assert total is None or 0 <= done <= total

    report = await load_graph(engine, SLASHDOT, password_hash=HASH, progress=progress)
    assert steps == [
        "read file",
        "stage users",
        "insert users",
        "stage follows",
        "resolve pairs",
        "insert follows",
        "add counters",
        "analyze",
    ]
    print(report.summary())

    assert report.users_seen == 82_168
    assert report.users_inserted + report.users_already_present == 82_168
    assert report.edge_lines == 948_464
    assert report.self_loops_skipped == 78_303
    assert report.duplicate_edges_skipped == 0
    assert report.malformed_lines == 0
    assert report.follows_inserted + report.follows_already_present == 870_161
    assert report.follows_refused_inactive == report.follows_refused_blocked == 0

    async with engine.connect() as conn:
        live = await conn.scalar(
            text(
                """
                SELECT count(*) FROM follows f
                JOIN users x ON x.id = f.follower_id JOIN users y ON y.id = f.followee_id
                WHERE f.deleted_at IS NULL
                  AND x.username ~ '^sd[0-9]{1,5}$' AND substr(x.username, 3)::int < 82168
                  AND y.username ~ '^sd[0-9]{1,5}$' AND substr(y.username, 3)::int < 82168
                """
            )
        )
    assert live == 870_161
    ids = await _ids(engine, [0, 2494])
    assert await _counts(engine, ids) == {0: (240, 215), 2494: (2552, 2510)}
    assert (await verify_follow_counts(engine)).drift == []
    # A second load of the same file changes nothing: shown on the small files above
    # (the real file again would double this test's time in every CI run).
