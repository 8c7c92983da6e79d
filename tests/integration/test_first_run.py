"""What ``roost run`` does before serving (docs/operations/running.md), decided by the
``data_loads`` record, never by empty tables; and how it ends when the terminal closes.
Each test has a database of its own: the records are per database."""

from __future__ import annotations

import asyncio
import gzip
import hashlib
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import text

from app.cli.data import DataError, prepare_data
from app.database import create_engine
from app.migrate import alembic_config, upgrade
from app.settings import Settings
from domain.data_loads import GRAPH, SEED_POSTS, recorded_load
from tests.support.servers import Output, free_port, throwaway_database

# A tiny SNAP edge list: sd0..sd5 follow each other in a ring, plus a self-loop.
EDGES = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 0), (0, 2), (3, 3)]


@pytest.fixture
def own_db():
    with throwaway_database() as url:
        yield url


def _graph(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.txt.gz"
    body = "# tiny\r\n" + "".join(f"{a}\t{b}\r\n" for a, b in EDGES)
    path.write_bytes(gzip.compress(body.encode()))
    return path


def _settings(url: str, graph: Path, seed_posts: int = 0) -> Settings:
    # No Redis: live seed posts stay in the outbox (no worker here), nothing else needs it.
    return Settings(
        DATABASE_URL=url,
        REDIS_URL=None,
        ROOST_GRAPH_PATH=graph,
        ROOST_SEED_POSTS=seed_posts,
        JWT_SECRET="test-secret-" + uuid.uuid4().hex,
    )


async def _scalar(url: str, sql: str, **params):
    engine = create_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.connect() as conn:
            return await conn.scalar(text(sql), params)
    finally:
        await engine.dispose()


async def _hand_made_account(url: str) -> None:
    engine = create_engine(url, pool_size=1, max_overflow=0)
    try:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, password_hash,"
                    " last_active_at) VALUES (gen_random_uuid(), 'newcomer', 'New', 'x', now())"
                )
            )
    finally:
        await engine.dispose()


async def test_a_hand_made_account_does_not_stop_the_first_load_nor_gets_seeded(
    own_db: str, tmp_path: Path, capsys
) -> None:
    """Sign up once, restart: the graph still loads (old rule: "users table empty"), and
    the seeded posts go to the graph's users only; a second start loads and seeds
    nothing again."""
    graph = _graph(tmp_path)
    await _hand_made_account(own_db)
    settings = _settings(own_db, graph, seed_posts=30)

    state = await prepare_data(settings, own_db, load=True)

    assert state.graph is not None and state.seed is not None
    assert state.graph.md5 == hashlib.md5(graph.read_bytes()).hexdigest()
    assert state.graph.source == str(graph)
    assert await _scalar(own_db, "SELECT count(*) FROM users WHERE username ~ '^sd[0-5]$'") == 6
    assert await _scalar(own_db, "SELECT count(*) FROM follows WHERE source = 'import'") == 7
    assert await _scalar(own_db, "SELECT count(*) FROM posts") == 30
    newcomer_posts = await _scalar(
        own_db,
        "SELECT count(*) FROM posts p JOIN users u ON u.id = p.author_id"
        " WHERE u.username = 'newcomer'",
    )
    assert newcomer_posts == 0
    out = capsys.readouterr().out
    assert "Loading the follow graph" in out and "Seeding 30 posts" in out

    again = await prepare_data(settings, own_db, load=True)

    assert again.graph == state.graph and again.seed == state.seed  # same records
    assert await _scalar(own_db, "SELECT count(*) FROM posts") == 30
    out = capsys.readouterr().out
    assert "Follow graph: loaded" in out and "Loading" not in out and "Seeding" not in out


async def test_a_missing_or_unreadable_graph_is_a_clear_failure(
    own_db: str, tmp_path: Path
) -> None:
    missing = tmp_path / "nope.txt.gz"
    with pytest.raises(DataError) as err:
        await prepare_data(_settings(own_db, missing), own_db, load=True)
    message = str(err.value)
    assert str(missing) in message and "does not exist" in message
    assert "git checkout -- data/" in message and "--no-load" in message

    truncated = tmp_path / "truncated.txt.gz"
    truncated.write_bytes(gzip.compress(b"1\t2\r\n" * 5000)[:-30])
    with pytest.raises(DataError, match="cannot load the follow graph"):
        await prepare_data(_settings(own_db, truncated), own_db, load=True)

    lfs_pointer = tmp_path / "pointer.txt.gz"
    lfs_pointer.write_text(
        "version https://git-lfs.github.com/spec/v1\noid sha256:" + "0" * 64 + "\nsize 3246522\n"
    )
    with pytest.raises(DataError, match="no edge line"):
        await prepare_data(_settings(own_db, lfs_pointer), own_db, load=True)

    engine = create_engine(own_db, pool_size=1, max_overflow=0)
    try:
        assert await recorded_load(engine, GRAPH) is None  # nothing recorded ...
    finally:
        await engine.dispose()
    assert await _scalar(own_db, "SELECT count(*) FROM users") == 0  # ... nor loaded


async def test_no_load_says_plainly_that_the_samples_return_nothing(
    own_db: str, tmp_path: Path, capsys
) -> None:
    state = await prepare_data(_settings(own_db, tmp_path / "absent.gz", 10), own_db, load=False)

    assert state.graph is None and state.seed is None
    out = capsys.readouterr().out
    assert "--no-load" in out and "return nothing" in out
    assert await _scalar(own_db, "SELECT count(*) FROM users") == 0
    engine = create_engine(own_db, pool_size=1, max_overflow=0)
    try:
        assert await recorded_load(engine, SEED_POSTS) is None
    finally:
        await engine.dispose()


def _roost_env(url: str, **extra: str) -> dict[str, str]:
    env = dict(
        os.environ,
        DATABASE_URL=url,
        PORT=str(free_port()),
        WORKER_METRICS_PORT="0",
        ARQ_QUEUE=f"roost-test:{uuid.uuid4().hex[:12]}",
        PYTHONUNBUFFERED="1",
        **extra,
    )
    env.setdefault("REDIS_URL", "redis://127.0.0.1:6379/0")
    return env


def _start(args: list[str], env: dict[str, str]) -> Output:
    proc = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # its own process group, as a terminal gives it
    )
    return Output(proc)


def test_roost_run_exits_before_serving_when_the_graph_is_missing(own_db: str) -> None:
    out = _start(["run"], _roost_env(own_db, ROOST_GRAPH_PATH="/nonexistent/graph.txt.gz"))
    code = out.finish(within=60)
    assert code == 1, out.text
    assert "/nonexistent/graph.txt.gz does not exist" in out.text
    assert "Roost is up" not in out.text and "Uvicorn running" not in out.text


def test_closing_the_terminal_stops_roost_run_without_a_traceback(own_db: str) -> None:
    """SIGHUP to the process group (what closing a terminal sends): the API, the worker
    and the embedded servers stop cleanly, exit 0, no traceback; the banner came after
    the worker had started (not buried under its start-up lines)."""
    out = _start(["run", "--no-load"], _roost_env(own_db))
    try:
        out.wait_for("Roost is up", within=60)
    except BaseException:
        os.killpg(out.proc.pid, signal.SIGKILL)
        raise
    os.killpg(out.proc.pid, signal.SIGHUP)
    code = out.finish(within=60)
    text_ = out.text
    assert code == 0, text_
    assert "Traceback" not in text_, text_
    assert "shutdown on SIGHUP" in text_  # the worker stopped on its own signal
    assert text_.index("Starting worker") < text_.index("Roost is up")
    assert "the sample queries" in text_  # --no-load said so
    # roost run is one API process with an access log: the banner says so, and how to
    # serve at full speed.
    assert "This is a development server" in text_ and "`roost serve`" in text_


def test_a_database_loaded_before_the_record_existed_is_not_loaded_again() -> None:
    """Migration 0007 gives a database that already holds the imported graph (and
    posts) the records it would have had, so `roost run` neither loads nor seeds again."""

    async def fill(url: str) -> None:
        engine = create_engine(url, pool_size=1, max_overflow=0)
        a, b = uuid.uuid4(), uuid.uuid4()
        try:
            async with engine.begin() as conn:
                await conn.execute(
                    text(
                        "INSERT INTO users (id, username, display_name, password_hash)"
                        " VALUES (:a, 'sd1', 'x', 'x'), (:b, 'sd2', 'x', 'x')"
                    ),
                    {"a": a, "b": b},
                )
                await conn.execute(
                    text(
                        "INSERT INTO follows (id, follower_id, followee_id, source)"
                        " VALUES (gen_random_uuid(), :a, :b, 'import')"
                    ),
                    {"a": a, "b": b},
                )
                await conn.execute(
                    text("INSERT INTO posts (id, author_id, caption) VALUES (:i, :a, 'hi')"),
                    {"i": uuid.uuid4(), "a": a},
                )
        finally:
            await engine.dispose()

    async def records(url: str):
        engine = create_engine(url, pool_size=1, max_overflow=0)
        try:
            return await recorded_load(engine, GRAPH), await recorded_load(engine, SEED_POSTS)
        finally:
            await engine.dispose()

    with throwaway_database(migrate=False) as url:
        scripts = ScriptDirectory.from_config(alembic_config(url))
        before = scripts.get_revision("0007").down_revision
        upgrade(url, before)  # the schema as it was before data_loads
        asyncio.run(fill(url))
        upgrade(url)
        graph, seed = asyncio.run(records(url))
    assert graph is not None and graph.source == "before migration 0007"
    assert seed is not None


async def test_a_fresh_database_has_no_load_recorded(own_db: str) -> None:
    engine = create_engine(own_db, pool_size=1, max_overflow=0)
    try:
        assert await recorded_load(engine, GRAPH) is None
        assert await recorded_load(engine, SEED_POSTS) is None
    finally:
        await engine.dispose()
