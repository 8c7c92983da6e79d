"""``roost counts`` and ``roost dlq``: check and repair a running system's data."""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid

from app.cli.common import _engine
from app.cli.progress import CliProgress
from app.embedded import services
from app.settings import Settings


async def _verify(settings: Settings, url: str) -> int:
    from domain.counters.verify import verify_counts

    engine = _engine(settings, url)
    try:
        t0 = time.monotonic()
        with CliProgress("counts verify") as progress:
            report = await verify_counts(engine, progress=progress)
    finally:
        await engine.dispose()
    kinds = ", ".join(f"{kind} {n}" for kind, n in report.by_kind.items())
    print(
        f"checked {report.checked} counters ({kinds}) in {time.monotonic() - t0:.1f} s,"
        f" drift {len(report.drift)}"
    )
    for d in report.drift[:20]:
        print(f"  {d.entity_id} {d.kind}: count(*)={d.actual} stored={d.stored}")
    if len(report.drift) > 20:
        print(f"  … and {len(report.drift) - 20} more")
    return 1 if report.drift else 0


async def _compact(settings: Settings, url: str) -> int:
    from domain.counters import compact

    engine = _engine(settings, url)
    try:
        t0 = time.monotonic()
        folded = await compact(engine)
    finally:
        await engine.dispose()
    print(f"folded {folded} counters in {time.monotonic() - t0:.1f} s")
    return 0


def cmd_counts(args: argparse.Namespace, settings: Settings) -> int:
    """``roost counts verify`` (exit 1 on any drift) or ``roost counts compact``."""
    with services(settings, fresh=False, redis=False) as urls:
        if args.action == "verify":
            return asyncio.run(_verify(settings, urls.database_url))
        return asyncio.run(_compact(settings, urls.database_url))


async def _dlq_list(settings: Settings, url: str, limit: int) -> int:
    from domain.outbox.process import list_dead_letters

    engine = _engine(settings, url)
    try:
        letters = await list_dead_letters(engine, limit=limit)
    finally:
        await engine.dispose()
    if not letters:
        print("No open dead letters.")
        return 0
    for d in letters:
        error = " ".join(d.error.split())
        print(
            f"{d.id}  event {d.event_id}  {d.topic} -> {d.consumer or 'every consumer'}"
            f"  attempts {d.attempts}"
            f"  {d.created_at.isoformat()}\n    {error[:300]}"
        )
    more = " (the oldest; --limit shows more)" if len(letters) == limit else ""
    print(f"{len(letters)} open dead letter(s){more}")
    return 0


async def _dlq_replay(settings: Settings, url: str, ids: list[uuid.UUID] | None) -> int:
    from domain.outbox.process import replay_dead_letters

    engine = _engine(settings, url)
    try:
        replayed = await replay_dead_letters(engine, ids)
    finally:
        await engine.dispose()
    print(
        f"Replayed {replayed} dead letter(s): back in the outbox as due now;"
        " a running worker re-drives each one's consumer (only that one) within a second."
    )
    if ids and replayed < len(ids):
        print(f"  {len(ids) - replayed} id(s) were not open dead letters.", file=sys.stderr)
    return 0


def cmd_dlq(args: argparse.Namespace, settings: Settings) -> int:
    """``roost dlq list [--limit N]``: the open dead letters, oldest first; ``roost dlq
    replay [ID ...]``: re-drive them (all open ones without ids)."""
    ids: list[uuid.UUID] | None = None
    if args.action == "replay" and args.ids:
        try:
            ids = [uuid.UUID(i) for i in args.ids]
        except ValueError:
            print("roost dlq replay: ids must be dead-letter UUIDs", file=sys.stderr)
            return 2
    elif args.action == "list" and args.ids:
        print("roost dlq list takes no ids", file=sys.stderr)
        return 2
    with services(settings, fresh=False, redis=False) as urls:
        if args.action == "list":
            return asyncio.run(_dlq_list(settings, urls.database_url, args.limit))
        return asyncio.run(_dlq_replay(settings, urls.database_url, ids))
