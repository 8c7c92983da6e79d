"""Use case: create an account and open its first session."""

from __future__ import annotations

from sqlalchemy import insert, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from domain.identity.errors import EmailTakenError, UsernameTakenError
from domain.identity.models import users
from domain.identity.passwords import hash_password
from domain.identity.queries import USER_COLUMNS, to_record
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import TokenConfig
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import EmailVerificationRequested, UserCreated
from domain.outbox.unit_of_work import unit_of_work
from domain.text import check_password, clean_display_name, clean_email, new_username

#: Whether a purged account's username is still reserved (domain.accounts.purge).
_HELD = text(
    "SELECT EXISTS (SELECT 1 FROM released_usernames WHERE username = :u"
    " AND reserved_until > now())"
)


async def sign_up(
    engine: AsyncEngine,
    config: TokenConfig,
    *,
    username: str,
    email: str,
    password: str,
    display_name: str,
    dispatcher: Dispatcher | None = None,
) -> AuthResult:
    """Create a user and return it with a token pair. Raises ValidationError (docs/design.md
    "Decided details"), UsernameTakenError (also while held) or EmailTakenError, writing nothing."""
    canonical = new_username(username)
    email = clean_email(email)
    check_password(password)
    display_name = clean_display_name(display_name)
    password_hash = await hash_password(password)
    user_id = new_id()
    try:
        async with unit_of_work(engine, dispatcher) as uow:
            conn = uow.conn
            row = (
                await conn.execute(
                    insert(users)
                    .values(
                        id=user_id,
                        username=canonical,
                        email=email,
                        display_name=display_name,
                        password_hash=password_hash,
                    )
                    .returning(*USER_COLUMNS)
                )
            ).one()
            user = to_record(row)
            # After the insert (it waited on the row): a purge freeing the name has committed.
            if await conn.scalar(_HELD, {"u": canonical}):
                raise UsernameTakenError(canonical, held=True)
            await uow.record(UserCreated(user.id))
            await uow.record(EmailVerificationRequested(user.id, email))
            auth = await open_session(conn, config, user)
        return auth
    except IntegrityError as exc:
        async with engine.connect() as conn:
            taken = await conn.scalar(select(users.c.id).where(users.c.username == canonical))
        if taken is not None or "users_username_key" in str(exc.orig):
            raise UsernameTakenError(canonical) from None
        raise EmailTakenError() from None
