"""``roost admin grant-moderator | revoke-moderator USERNAME``: the moderator role
(docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

import argparse
import asyncio
import sys

from app.cli.common import _engine
from app.embedded import services
from app.settings import Settings

#: The role each action sets.
ACTIONS = {"grant-moderator": True, "revoke-moderator": False}


async def _set_role(settings: Settings, url: str, username: str, on: bool) -> int:
    from domain.errors import ValidationError
    from domain.moderation.moderators import set_moderator
    from domain.text import normalize_username

    try:
        canonical = normalize_username(username)
    except ValidationError as exc:
        print(f"roost admin: {exc.message}", file=sys.stderr)
        return 2
    engine = _engine(settings, url)
    try:
        changed = await set_moderator(engine, canonical, on)
    finally:
        await engine.dispose()
    if changed is None:
        print(f"roost admin: no account is named {canonical!r}", file=sys.stderr)
        return 1
    role = "a moderator" if on else "not a moderator"
    print(f"{canonical}: {role}" if changed else f"{canonical}: already {role}")
    return 0


def cmd_admin(args: argparse.Namespace, settings: Settings) -> int:
    """Grant or revoke the moderator role of an account, effective at its next request."""
    with services(settings, fresh=False) as urls:
        return asyncio.run(
            _set_role(settings, urls.database_url, args.username, ACTIONS[args.action])
        )
