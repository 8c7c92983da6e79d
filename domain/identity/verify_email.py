"""Use case: verify an account's e-mail address with the code mailed to it."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.identity.email_tokens import VERIFY_EMAIL, redeem_token
from domain.identity.errors import InvalidTokenError
from domain.identity.queries import USER_SELECT, UserRecord, to_record
from domain.outbox.events import EmailVerified
from domain.outbox.unit_of_work import unit_of_work
from domain.visibility.predicates import is_active

_VERIFY = text(
    "UPDATE users SET email_verified_at = coalesce(email_verified_at, now())"
    f" WHERE id = :u AND email = :e AND {is_active()}"
    f" RETURNING {USER_SELECT}"
)


async def verify_email(engine: AsyncEngine, token: str) -> UserRecord:
    """Use verification code ``token`` and mark its address verified; return the account. Raises
    InvalidTokenError (bad, expired, used, or the address changed)."""
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        used = await redeem_token(conn, token, VERIFY_EMAIL)
        row = (await conn.execute(_VERIFY, {"u": used.user_id, "e": used.email})).first()
        if row is None:
            raise InvalidTokenError("That code was for an address this account no longer has.")
        await uow.record(EmailVerified(used.user_id, used.email))
    return to_record(row)
