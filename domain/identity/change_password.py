"""Use case: change one's password; every other session of the account ends
(docs/api/account-lifecycle.md "Account lifecycle")."""

from __future__ import annotations

import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.errors import AccountUnavailableError, WrongPasswordError
from domain.identity.passwords import hash_password, verify_password
from domain.identity.session_store import SessionStore
from domain.outbox.events import PasswordChanged
from domain.outbox.unit_of_work import unit_of_work
from domain.text import PASSWORD_MAX, PASSWORD_MIN, clean_text
from domain.visibility.predicates import is_active

_HASH = text(f"SELECT password_hash FROM users WHERE id = :x AND {is_active()}")

# Compare-and-set on the verified hash: of two concurrent changes only one succeeds.
_SET = text(
    "UPDATE users SET password_hash = :new WHERE id = :x AND password_hash = :old"
    f" AND {is_active()} RETURNING true"
)

_OTHER_SESSIONS = text(
    "SELECT DISTINCT family_id FROM sessions"
    " WHERE user_id = :x AND revoked_at IS NULL AND family_id <> :keep"
)


async def change_password(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    session_id: uuid.UUID,
    *,
    current_password: str,
    new_password: str,
    sessions: SessionStore | None = None,
) -> int:
    """Replace the password once ``current_password`` checks and end every session but
    ``session_id``, in one transaction; return how many ended. Raises ValidationError
    (``newPassword``), WrongPasswordError (also when a concurrent change won) or
    AccountUnavailableError."""
    clean_text("newPassword", new_password, max_len=PASSWORD_MAX, min_len=PASSWORD_MIN)
    async with engine.connect() as conn:
        old_hash = await conn.scalar(_HASH, {"x": user_id})
    if old_hash is None:
        raise AccountUnavailableError()
    if "\x00" in current_password or not await verify_password(old_hash, current_password):
        raise WrongPasswordError("currentPassword")
    new_hash = await hash_password(new_password)
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        if not await conn.scalar(_SET, {"new": new_hash, "old": old_hash, "x": user_id}):
            raise WrongPasswordError("currentPassword")
        params = {"x": user_id, "keep": session_id}
        others = [r[0] for r in await conn.execute(_OTHER_SESSIONS, params)]
        ended = await revoke_families(conn, user_id, others) if others else []
        await uow.record(PasswordChanged(user_id, len(ended)))
    await announce_ended(sessions, user_id, ended)
    return len(ended)
