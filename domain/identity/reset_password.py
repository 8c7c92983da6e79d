"""Use case: set a new password with a reset code; every session ends."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.email_tokens import RESET_PASSWORD, redeem_token
from domain.identity.end_sessions import announce_ended, revoke_families
from domain.identity.errors import InvalidTokenError
from domain.identity.passwords import hash_password
from domain.identity.session_store import SessionStore
from domain.outbox.events import PasswordChanged
from domain.outbox.unit_of_work import unit_of_work
from domain.text import PASSWORD_MAX, PASSWORD_MIN, clean_text
from domain.visibility.predicates import is_active

# The mail reached the address: it is verified too, if it is still the account's.
_SET = text(
    "UPDATE users SET password_hash = :h, email_verified_at = CASE"
    " WHEN email = :e THEN coalesce(email_verified_at, now()) ELSE email_verified_at END"
    f" WHERE id = :u AND {is_active()} RETURNING id"
)
#: The account's other reset codes stop working with this one.
_OTHERS_USED = text(
    "UPDATE email_tokens SET used_at = now()"
    " WHERE user_id = :u AND purpose = 'reset_password' AND used_at IS NULL"
)


async def reset_password(
    engine: AsyncEngine,
    token: str,
    *,
    new_password: str,
    sessions: SessionStore | None = None,
) -> int:
    """Use reset code ``token`` to set ``new_password`` and end every session, in one transaction;
    return how many ended. Raises ValidationError (``newPassword``; the code stays unused) or
    InvalidTokenError (bad, expired or used code, or an inactive account)."""
    clean_text("newPassword", new_password, max_len=PASSWORD_MAX, min_len=PASSWORD_MIN)
    new_hash = await hash_password(new_password)
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        used = await redeem_token(conn, token, RESET_PASSWORD)
        params = {"h": new_hash, "e": used.email, "u": used.user_id}
        if (await conn.execute(_SET, params)).first() is None:
            raise InvalidTokenError("That account is not available.")
        await conn.execute(_OTHERS_USED, {"u": used.user_id})
        ended = await revoke_families(conn, used.user_id)
        await uow.record(PasswordChanged(used.user_id, len(ended)))
    await announce_ended(sessions, used.user_id, ended)
    return len(ended)
