"""``roost migrate``, ``roost load-graph`` and ``roost seed-posts``: put data in."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from app.cli.common import _engine, _migrate, _use
from app.embedded import services
from app.settings import Settings

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

#: Feeds ``roost seed-posts`` rebuilds before its live posts, so their fan-out has
#: cached feeds to write to (the rest are rebuilt on first read).
SEED_WARM_FEEDS = 200
#: Posts of a seed published through create_post (outbox -> worker fan-out).
SEED_LIVE_POSTS = 200


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    """``roost migrate``: create the database if missing and upgrade it to head."""
    with services(settings, fresh=False, redis=False) as urls:
        _migrate(urls.database_url)
    return 0


async def _has_rows(engine: AsyncEngine, table: str) -> bool:
    """Whether ``table`` (one of ours, never user input) has any row."""
    from sqlalchemy import text

    async with engine.connect() as conn:
        return bool((await conn.execute(text(f"SELECT EXISTS (SELECT 1 FROM {table})"))).scalar())


async def _load_graph(settings: Settings, url: str, path: Path, *, only_if_empty: bool) -> int:
    """Load the follow graph at ``path`` through domain.social.load_graph; print its
    report. Returns an exit code (0 also when skipped because users exist)."""
    try:
        from domain.social.load_graph import load_graph
    except ImportError as exc:
        print(f"roost: cannot load the graph yet ({exc})", file=sys.stderr)
        return 1
    from domain.identity.passwords import hash_password_sync

    engine = _engine(settings, url)
    try:
        if only_if_empty and await _has_rows(engine, "users"):
            return 0
        if not await asyncio.to_thread(path.exists):
            print(f"roost: no graph at {path}; set ROOST_GRAPH_PATH", file=sys.stderr)
            return 1
        print(f"Loading {path} (first start only; this takes a while)…", flush=True)
        t0 = time.monotonic()
        report = await load_graph(
            engine, path, password_hash=hash_password_sync(settings.dev_password)
        )
        print(report.summary())
        print(f"loaded in {time.monotonic() - t0:.1f} s", flush=True)
        return 0
    finally:
        await engine.dispose()


async def _load_celebrities(settings: Settings, url: str) -> int:
    """Add the synthetic celebrity accounts (domain.social.load_celebrities); print what
    was added. Their posts are dispatched to the worker when Redis is configured."""
    from domain.identity.passwords import hash_password_sync
    from domain.social.load_celebrities import load_celebrities

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


def cmd_load_graph(args: argparse.Namespace, settings: Settings) -> int:
    """``roost load-graph [PATH] [--celebrities]``: migrate, then load a SNAP edge list.

    With ``--celebrities``: load the graph only if PATH is given or there are no users
    yet, then add the celebrity accounts (idempotent: present ones are left alone).
    """
    path = Path(args.path) if args.path else settings.graph_path
    with services(settings, fresh=False, redis=args.celebrities) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        if not args.celebrities:
            return asyncio.run(_load_graph(settings, urls.database_url, path, only_if_empty=False))
        rc = asyncio.run(
            _load_graph(settings, urls.database_url, path, only_if_empty=not args.path)
        )
        return rc or asyncio.run(_load_celebrities(settings, urls.database_url))


def _dispatcher(settings: Settings):
    """An arq dispatcher for outbox events when Redis is configured, else None (the
    worker's relay then picks the events up within seconds of starting)."""
    if not settings.redis_url:
        return None
    from app.jobs import ArqDispatcher

    return ArqDispatcher(settings.redis_url, settings.arq_queue)


async def _seed(settings: Settings, url: str, count: int, *, quiet_if_present: bool) -> int:
    """Seed ``count`` posts through domain.posts.seed_posts (skipped if posts exist:
    silently with ``quiet_if_present``); print its report and the time taken."""
    from domain.feed.config import FeedStores
    from domain.posts.seed_posts import seed_posts

    engine = _engine(settings, url)
    if quiet_if_present and await _has_rows(engine, "posts"):
        await engine.dispose()
        return 0
    redis = settings.open_feed_redis()  # the feed store (REDIS_URL or the cluster)
    dispatcher = _dispatcher(settings)
    try:
        print(f"Seeding {count:,} posts over the users (once; ~20 s)…", flush=True)
        report = await seed_posts(
            engine,
            count=count,
            live_tail=SEED_LIVE_POSTS,
            counter_shards=settings.counter_shards,
            dispatcher=dispatcher,
            stores=FeedStores.on(redis, settings.feed_config) if redis is not None else None,
            warm_feeds=SEED_WARM_FEEDS,
        )
    finally:
        if dispatcher is not None:
            await dispatcher.close()
        if redis is not None:
            await redis.aclose()
        await engine.dispose()
    print(report.summary(), flush=True)
    if report.live_posts:
        print(
            f"  {report.live_posts} live posts wait in the outbox / job queue for"
            " `roost worker` to fan them out.",
            flush=True,
        )
    return 0


def cmd_seed_posts(args: argparse.Namespace, settings: Settings) -> int:
    """``roost seed-posts [--count N]``: migrate, then seed posts unless any exist."""
    count = settings.seed_posts if args.count is None else args.count
    with services(settings, fresh=False) as urls:
        settings = _use(settings, urls)
        _migrate(urls.database_url)
        return asyncio.run(_seed(settings, urls.database_url, count, quiet_if_present=False))
