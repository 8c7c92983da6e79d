"""Use case: mute an account (docs/api/mute-and-block.md "Mute and blocked list").

A mute hides the muted account's posts from the muter's home feed and its
notifications from the muter's, without unfollowing, and without anything showing on
the muted account's side: no notification, no change to any count or list it can see.
The home feed drops muted authors at read time (domain.visibility.rules.in_home_feed),
so the cached feed stays as it is and unmuting brings the posts back at once;
notifications from the muted account are removed (like a block's, they do not come
back) and no new ones are written (domain.notifications.store.eligible_recipients).
unmute_user lifts it.
"""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters import add_deltas
from domain.errors import NotFoundError
from domain.moderation.account_locks import lock_statuses
from domain.notifications.forget import forget_from
from domain.outbox.append import append
from domain.outbox.events import MuteCreated
from domain.social.errors import SelfMuteError
from domain.social.pairs import lock_pair

_INSERT = text(
    "INSERT INTO mutes (muter_id, muted_id) VALUES (:muter, :muted)"
    " ON CONFLICT DO NOTHING RETURNING true"
)


async def mute_user(
    engine: AsyncEngine, muter_id: uuid.UUID, muted_id: uuid.UUID, *, counter_shards: int
) -> bool:
    """Mute ``muted_id`` for ``muter_id``; return True if the mute is new.

    One transaction under the pair lock that notification writers take (so none from
    the muted account lands after the mute): the mute row, the removal of what the
    muted account notified the muter of (with the muter's unread counter), and a
    ``mute.created`` outbox event. Idempotent. Raises SelfMuteError, or NotFoundError
    when the account does not exist or is not active.
    """
    if muter_id == muted_id:
        raise SelfMuteError()
    params = {"muter": muter_id, "muted": muted_id}
    async with engine.begin() as conn:
        await lock_pair(conn, muter_id, muted_id)
        statuses = await lock_statuses(conn, [muter_id, muted_id])
        if statuses.get(muted_id) != "active":
            raise NotFoundError("No user has that id.")
        created = bool(await conn.scalar(_INSERT, params))
        if created:
            deltas = await forget_from(conn, muted_id, muter_id)
            await add_deltas(conn, deltas, shards=counter_shards)
            await append(conn, MuteCreated(muter_id, muted_id))
    return created
