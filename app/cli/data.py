"""``roost migrate``, ``roost load-graph``, ``roost seed-posts``, and what ``roost run``
loads before serving (:func:`prepare_data`, decided by ``data_loads``)."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.common import _engine, _migrate, _use
from app.cli.progress import CliProgress
from app.embedded import services
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from domain.data_loads import DataLoad

#: Feeds ``roost seed-posts`` rebuilds before its live posts, so their fan-out has
#: cached feeds to write to (the rest are rebuilt on first read).
SEED_WARM_FEEDS = 200
#: Posts of a seed published through create_post (outbox -> worker fan-out).
SEED_LIVE_POSTS = 200

NO_LOAD_HINT = (
    "To start with an empty database instead, run `make run RUN_ARGS=--no-load`"
    " (`roost run --no-load`): the sample queries then return nothing."
)


class DataError(Exception):
    """The graph cannot be loaded: the message says why and what to do (for people)."""


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    """``roost migrate``: create the database if missing and upgrade it to head."""
    with services(settings, fresh=False, redis=False) as urls:
        _migrate(urls.database_url)
    return 0


def file_md5(path: Path) -> str:
    """The md5 of the file at ``path`` (hex). Raises OSError."""
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _missing_graph(path: Path) -> DataError:
    return DataError(
        f"roost: the follow graph to load is missing: {path} does not exist.\n"
        "  A clone of Roost has it at data/soc-Slashdot0902.txt.gz (restore it with"
        " `git checkout -- data/`); ROOST_GRAPH_PATH may point at another SNAP edge list.\n"
        f"  {NO_LOAD_HINT}"
    )


def _unreadable_graph(path: Path, why: str) -> DataError:
    return DataError(
        f"roost: cannot load the follow graph {path}: {why}\n"
        "  Check the file (`md5sum` against data/README.md) or set ROOST_GRAPH_PATH.\n"
        f"  {NO_LOAD_HINT}"
    )


async def load_graph_file(engine: AsyncEngine, settings: Settings, path: Path) -> DataLoad:
    """Load the SNAP edge list at ``path``, record it in ``data_loads``; the record.
    Raises :class:`DataError` (missing, unreadable, corrupt or empty), recording nothing."""
    from domain.data_loads import GRAPH, record_load, recorded_load
    from domain.identity.passwords import hash_password_sync
    from tools.load_graph import load_graph

    try:
        md5 = await asyncio.to_thread(file_md5, path)
    except FileNotFoundError:
        raise _missing_graph(path) from None
    except OSError as exc:
        raise _unreadable_graph(path, exc.strerror or str(exc)) from None
    print(f"Loading the follow graph {path} (once per database)…", flush=True)
    password_hash = await asyncio.to_thread(hash_password_sync, settings.dev_password)
    try:
        with CliProgress("load-graph") as progress:
            report = await load_graph(engine, path, password_hash=password_hash, progress=progress)
    except (OSError, EOFError) as exc:  # corrupt or truncated gzip; nothing was written
        raise _unreadable_graph(path, str(exc) or type(exc).__name__) from None
    print(report.summary(), flush=True)
    if report.edge_lines == 0:
        raise _unreadable_graph(path, "no edge line in it (a Git LFS pointer? an HTML page?)")
    await record_load(engine, GRAPH, source=str(path), md5=md5, summary=report.summary())
    loaded = await recorded_load(engine, GRAPH)
    assert loaded is not None
    return loaded


async def _load_graph(settings: Settings, url: str, path: Path) -> int:
    """``roost load-graph PATH``: load (idempotent) and record; an exit code."""
    engine = _engine(settings, url)
    try:
        await load_graph_file(engine, settings, path)
        return 0
    except DataError as exc:
        print(exc, file=sys.stderr)
        return 1
    finally:
        await engine.dispose()


async def _load_celebrities(settings: Settings, url: str) -> int:
    """Add the synthetic celebrity accounts; their posts go to the worker with Redis."""
    from domain.identity.passwords import hash_password_sync
    from tools.load_celebrities import load_celebrities

    engine = _engine(settings, url)
    dispatcher = _dispatcher(settings)
    try:
        report = await load_celebrities(
            engine,
            password_hash=await asyncio.to_thread(hash_password_sync, settings.dev_password),
            dispatcher=dispatcher,
        )
    except ValueError as exc:
        print(f"roost: {exc}", file=sys.stderr)
        return 1
    finally:
        if dispatcher is not None:
            await dispatcher.close()
        await engine.dispose()
    print(report.summary(), flush=True)
    return 0


async def _graph_missing_from_database(settings: Settings, url: str) -> bool:
    from domain.data_loads import GRAPH, recorded_load

    engine = _engine(settings, url)
    try:
        return await recorded_load(engine, GRAPH) is None
    finally:
        await engine.dispose()


def cmd_load_graph(args: argparse.Namespace, settings: Settings) -> int:
    """``roost load-graph [PATH] [--celebrities]``: migrate, load and record;
    ``--celebrities`` loads only if needed, then adds the celebrities (idempotent)."""
    path = Path(args.path) if args.path else settings.graph_path
    with services(settings, fresh=False, redis=args.celebrities) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        url = urls.database_url
        if not args.celebrities:
            return asyncio.run(_load_graph(settings, url, path))
        if args.path or asyncio.run(_graph_missing_from_database(settings, url)):
            rc = asyncio.run(_load_graph(settings, url, path))
            if rc:
                return rc
        return asyncio.run(_load_celebrities(settings, url))


def _dispatcher(settings: Settings):
    """An arq dispatcher with Redis, else None (the worker's relay picks events up)."""
    from app.container import dispatcher_for

    return dispatcher_for(settings)


async def seed_graph_posts(engine: AsyncEngine, settings: Settings, count: int) -> DataLoad:
    """Seed ``count`` posts over the users the graph load created (never hand-made
    accounts) and record it in ``data_loads``."""
    from app.container import build_services
    from domain.data_loads import SEED_POSTS, record_load, recorded_load
    from tools.load_graph import imported_user_ids
    from tools.seed_posts import seed_posts

    population = await imported_user_ids(engine)
    services = build_services(settings, client="worker", engine=engine)
    try:
        print(
            f"Seeding {count:,} posts over the {len(population):,} users of the graph (once)…",
            flush=True,
        )
        with CliProgress("seed-posts") as progress:
            report = await seed_posts(
                engine,
                count=count,
                users=population,
                live_tail=SEED_LIVE_POSTS,
                counter_shards=settings.counter_shards,
                dispatcher=services.dispatcher,
                stores=services.stores(),
                warm_feeds=SEED_WARM_FEEDS,
                progress=progress,
            )
    finally:
        await services.aclose()
    print(report.summary(), flush=True)
    if report.live_posts:
        print(
            f"  {report.live_posts} live posts wait in the outbox / job queue for"
            " `roost worker` to fan them out.",
            flush=True,
        )
    await record_load(
        engine, SEED_POSTS, source=f"seed_posts(count={count})", md5=None, summary=report.summary()
    )
    loaded = await recorded_load(engine, SEED_POSTS)
    assert loaded is not None
    return loaded


async def _seed(settings: Settings, url: str, count: int) -> int:
    engine = _engine(settings, url)
    try:
        await seed_graph_posts(engine, settings, count)
    finally:
        await engine.dispose()
    return 0


def cmd_seed_posts(args: argparse.Namespace, settings: Settings) -> int:
    """``roost seed-posts [--count N]``: migrate, then seed posts over the graph's users
    unless they have posts already."""
    count = settings.seed_posts if args.count is None else args.count
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        return asyncio.run(_seed(settings, urls.database_url, count))


@dataclass(frozen=True)
class DataState:
    """The graph's and the seed's records ``roost run`` found or made (None: absent)."""

    graph: DataLoad | None
    seed: DataLoad | None


async def prepare_data(settings: Settings, url: str, *, load: bool) -> DataState:
    """Load ROOST_GRAPH_PATH and seed ROOST_SEED_POSTS posts unless ``data_loads`` says
    done (``load=False``: nothing). :class:`DataError` when the graph cannot be read."""
    from domain.data_loads import GRAPH, SEED_POSTS, recorded_load

    engine = _engine(settings, url)
    try:
        graph = await recorded_load(engine, GRAPH)
        seed = await recorded_load(engine, SEED_POSTS)
        if not load:
            if graph is None:
                print(
                    "--no-load: the follow graph is not loaded into this database, so the"
                    " sample queries (sd2494, sd0) return nothing; `roost load-graph` loads"
                    " it later.",
                    flush=True,
                )
            return DataState(graph, seed)
        if graph is None:
            graph = await load_graph_file(engine, settings, settings.graph_path)
        else:
            await _note_loaded_graph(graph, settings.graph_path)
        if seed is None and settings.seed_posts:
            seed = await seed_graph_posts(engine, settings, settings.seed_posts)
        return DataState(graph, seed)
    finally:
        await engine.dispose()


async def _note_loaded_graph(graph: DataLoad, path: Path) -> None:
    """Say which graph the database holds; warn when ROOST_GRAPH_PATH is another file."""
    when = graph.loaded_at.strftime("%Y-%m-%d %H:%M UTC")
    print(f"Follow graph: loaded {when} from {graph.source}.", flush=True)
    if graph.md5 is None:
        return
    try:
        md5 = await asyncio.to_thread(file_md5, path)
    except OSError:
        return  # the file is gone, the data is not: nothing to say
    if md5 != graph.md5:
        print(
            f"  Note: ROOST_GRAPH_PATH ({path}, md5 {md5}) is not the file loaded"
            f" (md5 {graph.md5}); `roost load-graph` adds it, `make clean-data` starts over.",
            flush=True,
        )
