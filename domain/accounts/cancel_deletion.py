"""Use case: the owner cancels their account's deletion within the grace period and signs in."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.identity.credentials import check_credentials
from domain.identity.errors import InvalidCredentialsError
from domain.identity.log_in import in_grace_period
from domain.identity.queries import users_by_ids
from domain.identity.session_store import SessionStore
from domain.identity.sessions import AuthResult, open_session
from domain.identity.tokens import TokenConfig
from domain.moderation.set_user_status import change_status
from domain.outbox.events import AccountDeletionCancelled
from domain.outbox.unit_of_work import unit_of_work


async def cancel_account_deletion(
    engine: AsyncEngine,
    config: TokenConfig,
    *,
    username: str,
    password: str,
    counter_shards: int,
    sessions: SessionStore | None = None,
) -> AuthResult:
    """Restore ``username`` before its purge is due if ``password`` checks, and open a session as
    logIn does, in one transaction. Raises InvalidCredentialsError (uniform for every refusal)."""
    found = await check_credentials(engine, username, password)
    if found is None:
        raise InvalidCredentialsError()
    account = found.user
    if account.status == "active":
        async with engine.begin() as conn:
            return await open_session(conn, config, account)
    if not in_grace_period(account.status, found.deletion_due_at):
        raise InvalidCredentialsError()
    try:
        async with unit_of_work(engine) as uow:
            conn = uow.conn
            change = await change_status(uow, account.id, "active", counter_shards=counter_shards)
            if change.changed:
                await uow.record(AccountDeletionCancelled(account.id))
            user = (await users_by_ids(conn, [account.id]))[account.id]
            if user.status != "active":
                raise InvalidCredentialsError()
            auth = await open_session(conn, config, user)
    except ValidationError:  # the grace period ended meanwhile: the purge owns it
        raise InvalidCredentialsError() from None
    await change.announce(sessions)
    return auth
