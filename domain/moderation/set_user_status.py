"""Use case: ban, reinstate or delete an account, correcting its counters
(docs/architecture/counters.md "Counters") and notifications in the same transaction."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.counters import Delta, add_deltas
from domain.errors import NotFoundError, ValidationError
from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.session_store import SessionStore
from domain.locks import advisory_xact_lock
from domain.notifications.forget import forget_actor
from domain.outbox.events import UserStatusChanged
from domain.outbox.unit_of_work import UnitOfWork, unit_of_work
from domain.visibility.predicates import is_active, is_live

Status = Literal["active", "banned", "pending_deletion", "deleted"]
STATUSES: tuple[Status, ...] = ("active", "banned", "pending_deletion", "deleted")
#: What an operator or moderator may set (``pending_deletion`` is the owner's).
OPERATOR_STATUSES: tuple[Status, ...] = ("active", "banned", "deleted")

# FOR UPDATE waits out every counted write's FOR KEY SHARE; later writes see the status.
_LOCK = text("SELECT status, deletion_due_at > now() AS grace FROM users WHERE id = :x FOR UPDATE")

_FOLLOWEES = text(f"SELECT followee_id FROM follows WHERE follower_id = :x AND {is_live()}")
_FOLLOWERS = text(f"SELECT follower_id FROM follows WHERE followee_id = :x AND {is_live()}")
_LIKED = text("SELECT post_id FROM likes WHERE user_id = :x")

# The live comments :x is part of that the counters count: its own and replies to it.
_COMMENTS = text(
    f"""
    WITH involved AS (
        SELECT id FROM comments WHERE author_id = :x AND {is_live()}
        UNION
        SELECT r.id FROM comments pc
        JOIN comments r ON r.parent_id = pc.id AND {is_live("r")}
        WHERE pc.author_id = :x AND pc.parent_id IS NULL AND {is_live("pc")}
    )
    SELECT c.post_id, count(*) FROM involved i
    JOIN comments c ON c.id = i.id
    JOIN users ca ON ca.id = c.author_id
    LEFT JOIN comments pc ON pc.id = c.parent_id
    LEFT JOIN users pa ON pa.id = pc.author_id
    WHERE ({is_active("ca")} OR ca.id = :x)
      AND (c.parent_id IS NULL
           OR ({is_live("pc")} AND ({is_active("pa")} OR pa.id = :x)))
    GROUP BY c.post_id
    """
)


async def set_user_status(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    status: Status,
    *,
    counter_shards: int,
    sessions: SessionStore | None = None,
) -> bool:
    """Set ``banned``, ``active`` or ``deleted`` via :func:`change_status`, then tell ``sessions``;
    True if changed. Raises NotFoundError or ValidationError."""
    if status not in OPERATOR_STATUSES:
        raise ValidationError("status", f"The status is one of {', '.join(OPERATOR_STATUSES)}.")
    async with unit_of_work(engine) as uow:
        change = await change_status(uow, user_id, status, counter_shards=counter_shards)
    await change.announce(sessions)
    return change.changed


@dataclass(frozen=True)
class StatusChange:
    """Whether the status changed, from what, and the sessions ended."""

    user_id: uuid.UUID
    status: str
    previous: str
    ended: list[uuid.UUID]

    @property
    def changed(self) -> bool:
        """Whether the status is new."""
        return self.previous != self.status

    async def announce(self, sessions: SessionStore | None) -> None:
        """After the commit: tell the session cache (never raises)."""
        if self.changed:
            await announce_ended(sessions, self.user_id, self.ended, status=self.status)


async def change_status(
    uow: UnitOfWork, user_id: uuid.UUID, status: Status, *, counter_shards: int
) -> StatusChange:
    """Change the status in the caller's transaction: ±1 on its counters, notifications removed,
    sessions ended, ``user.status_changed``; one at a time (advisory lock). The caller announces
    it after commit (:meth:`StatusChange.announce`). Raises NotFoundError or ValidationError."""
    if status not in STATUSES:
        raise ValidationError("status", f"The status is one of {', '.join(STATUSES)}.")
    conn = uow.conn
    await advisory_xact_lock(conn, "user-status")
    row = (await conn.execute(_LOCK, {"x": user_id})).first()
    if row is None:
        raise NotFoundError("No user has that id.")
    previous = row.status
    if previous == status:
        return StatusChange(user_id, status, previous, [])
    if previous == "deleted":
        raise ValidationError("status", "A deleted account cannot be restored.")
    if previous == "pending_deletion" and status == "banned":
        raise ValidationError("status", "The account is being deleted by its owner.")
    if previous == "pending_deletion" and status == "active" and not row.grace:
        raise ValidationError("status", "The account's grace period is over: it is being purged.")
    await conn.execute(
        text(
            "UPDATE users SET status = :s,"
            " deletion_due_at = CASE WHEN :s = 'active' THEN NULL ELSE deletion_due_at END"
            " WHERE id = :x"
        ),
        {"s": status, "x": user_id},
    )
    deltas: list[Delta] = []
    was, now = previous == "active", status == "active"
    if was != now:
        deltas += await counted_part(conn, user_id, sign=1 if now else -1)
    ended: list[uuid.UUID] = []
    if was and not now:
        deltas += await forget_actor(conn, user_id)
        ended = await revoke_families(conn, user_id)
    await add_deltas(conn, deltas, shards=counter_shards)
    await uow.record(UserStatusChanged(user_id, status, previous))
    return StatusChange(user_id, status, previous, ended)


async def counted_part(conn: AsyncConnection, user_id: uuid.UUID, *, sign: int) -> list[Delta]:
    """The counter deltas of ``user_id`` turning active (``sign`` +1) or inactive (-1), four
    statements."""
    params = {"x": user_id}
    deltas = [Delta(r[0], "followers", sign) for r in await conn.execute(_FOLLOWEES, params)]
    deltas += [Delta(r[0], "following", sign) for r in await conn.execute(_FOLLOWERS, params)]
    deltas += [Delta(r[0], "likes", sign) for r in await conn.execute(_LIKED, params)]
    deltas += [
        Delta(r[0], "comments", sign * int(r[1])) for r in await conn.execute(_COMMENTS, params)
    ]
    return deltas
