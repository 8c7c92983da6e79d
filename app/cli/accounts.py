"""``roost account ban | delete | reinstate USERNAME``: an operator's account actions."""

from __future__ import annotations

import argparse
import asyncio
import sys

from redis.asyncio import Redis

from app.cli.common import _engine
from app.embedded import services
from app.sessions import session_store
from app.settings import Settings

#: The account status each action sets.
STATUS = {"ban": "banned", "delete": "deleted", "reinstate": "active"}


async def _set_status(settings: Settings, urls, username: str, status: str) -> int:
    from domain.errors import ValidationError
    from domain.identity.queries import user_by_username
    from domain.moderation.set_user_status import set_user_status
    from domain.text import normalize_username

    try:
        canonical = normalize_username(username)
    except ValidationError as exc:
        print(f"roost account: {exc.message}", file=sys.stderr)
        return 2
    engine = _engine(settings, urls.database_url)
    redis = Redis.from_url(urls.redis_url) if urls.redis_url else None
    try:
        async with engine.connect() as conn:
            user = await user_by_username(conn, canonical)
        if user is None:
            print(f"roost account: no account is named {canonical!r}", file=sys.stderr)
            return 1
        try:
            changed = await set_user_status(
                engine,
                user.id,
                status,  # type: ignore[arg-type]
                counter_shards=settings.counter_shards,
                sessions=session_store(redis, settings.token_config),
            )
        except ValidationError as exc:
            print(f"roost account: {exc.message}", file=sys.stderr)
            return 1
    finally:
        await engine.dispose()
        if redis is not None:
            await redis.aclose()
    print(f"{canonical}: {status}" if changed else f"{canonical}: already {status}")
    return 0


def cmd_account(args: argparse.Namespace, settings: Settings) -> int:
    """Ban, delete or reinstate an account: banning or deleting ends its sessions at once,
    on every transport, and takes it out of every count."""
    with services(settings, fresh=False) as urls:
        return asyncio.run(_set_status(settings, urls, args.username, STATUS[args.action]))
