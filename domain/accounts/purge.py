"""Use case: purge a due account's personal data (docs/api/account-lifecycle.md "Account
lifecycle"). Idempotent and resumable: each step is one batch in its own transaction; only the last
marks it purged."""

from __future__ import annotations

import datetime as dt
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.accounts import purge_rows as rows
from domain.accounts.config import AccountsConfig
from domain.accounts.purge_feeds import forget_progress, purge_author_feeds
from domain.counters import add_deltas
from domain.feed.config import FeedConfig, FeedStores
from domain.locks import advisory_xact_lock
from domain.media.ports import ObjectStore
from domain.media.purge_media import purge_owner_media
from domain.notifications.forget import forget_actor
from domain.outbox.events import UserPurged
from domain.outbox.unit_of_work import unit_of_work
from domain.text import TOMBSTONE_PREFIX

log = logging.getLogger("roost.accounts")

#: Deletion asked (or by an operator meanwhile), grace over, purge not finished.
_DUE = """
    deletion_due_at <= now() AND purged_at IS NULL
    AND status IN ('pending_deletion', 'deleted')
"""
_DUE_ACCOUNTS = text(f"SELECT id FROM users WHERE {_DUE} ORDER BY deletion_due_at, id LIMIT :n")
_IS_DUE = text(f"SELECT EXISTS (SELECT 1 FROM users WHERE id = :u AND {_DUE})")
_LOCK_DUE = text(f"SELECT status FROM users WHERE id = :u AND {_DUE} FOR UPDATE")

#: The tombstone: ids kept, personal fields replaced; the username is held.
_SCRUB = text(
    """
    WITH held AS (
        INSERT INTO released_usernames (username, reserved_until)
        SELECT username, now() + :hold FROM users WHERE id = :u
        ON CONFLICT (username) DO UPDATE SET reserved_until = EXCLUDED.reserved_until
    )
    UPDATE users SET username = :placeholder, display_name = 'Deleted account', bio = '',
        email = NULL, email_verified_at = NULL, password_hash = '!', is_private = false,
        website = NULL, avatar = NULL, avatar_upload_id = NULL,
        is_moderator = false, last_active_at = NULL, status = 'deleted', purged_at = now()
    WHERE id = :u
    """
)


_PRUNE_RELEASED = text("DELETE FROM released_usernames WHERE reserved_until <= now()")


async def prune_released_usernames(engine: AsyncEngine) -> int:
    """Forget usernames whose hold is over; return how many."""
    async with engine.begin() as conn:
        result = await conn.execute(_PRUNE_RELEASED)
    return result.rowcount or 0


def placeholder_username(user_id: uuid.UUID) -> str:
    """``deleted.<22 hex of the id>``: a valid username nobody can sign up with."""
    return TOMBSTONE_PREFIX + user_id.hex[-22:]


_TAKEN = text("SELECT EXISTS (SELECT 1 FROM users WHERE username = :n AND id <> :u)")


async def _free_placeholder(conn: AsyncConnection, user_id: uuid.UUID) -> str:
    """The placeholder username, or ``deleted.`` + 22 random hex when a row holds it. The caller
    holds the status-change lock."""
    name = placeholder_username(user_id)
    while await conn.scalar(_TAKEN, {"n": name, "u": user_id}):
        name = TOMBSTONE_PREFIX + uuid.uuid4().hex[:22]
    return name


@dataclass(frozen=True)
class PurgeRun:
    """One run: accounts purged, whether the deadline stopped it, failures (retried next run)."""

    purged: list[uuid.UUID]
    unfinished: bool
    failed: list[uuid.UUID] = field(default_factory=list)


async def purge_due_accounts(
    engine: AsyncEngine,
    config: AccountsConfig,
    *,
    counter_shards: int,
    stores: FeedStores | None,
    feed_config: FeedConfig,
    deadline: float | None = None,
    limit: int = 100,
    media_store: ObjectStore | None = None,
) -> PurgeRun:
    """Purge up to ``limit`` due accounts, oldest first, until ``deadline`` (monotonic; None:
    none). Failures are logged, listed and skipped; raises DBAPIError for the list."""
    async with engine.connect() as conn:
        due = [r[0] for r in await conn.execute(_DUE_ACCOUNTS, {"n": limit})]
    purged: list[uuid.UUID] = []
    failed: list[uuid.UUID] = []
    for user_id in due:
        try:
            done = await purge_account(
                engine,
                user_id,
                config=config,
                counter_shards=counter_shards,
                stores=stores,
                feed_config=feed_config,
                deadline=deadline,
                media_store=media_store,
            )
        except Exception:  # this account's failure; the others go on
            log.exception("the purge of account %s failed; the next run retries it", user_id)
            failed.append(user_id)
            continue
        if not done:
            return PurgeRun(purged, unfinished=True, failed=failed)
        purged.append(user_id)
    return PurgeRun(purged, unfinished=False, failed=failed)


async def purge_account(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    config: AccountsConfig,
    counter_shards: int,
    stores: FeedStores | None,
    feed_config: FeedConfig,
    deadline: float | None = None,
    media_store: ObjectStore | None = None,
) -> bool:
    """Purge one due account: feeds, media, rows by batch, then tombstone and ``user.purged``. True
    when purged (or not due), False when ``deadline`` passed first (call again to resume)."""
    async with engine.connect() as conn:
        if not await conn.scalar(_IS_DUE, {"u": user_id}):
            return True
    if stores is not None and not await purge_author_feeds(
        engine, stores, feed_config, user_id, deadline=deadline
    ):
        return False
    batch, shards = config.purge_batch, counter_shards
    steps: list[Callable[[], Awaitable[int]]] = [
        # Before the posts: the delivery keys are read from the posts' media.
        *(
            [lambda: purge_owner_media(engine, media_store, user_id, batch=batch)]
            if media_store is not None
            else []
        ),
        lambda: rows.purge_posts(engine, user_id, batch=batch, shards=shards),
        lambda: rows.purge_own_comments(engine, user_id, batch=batch, shards=shards),
        lambda: rows.purge_follows(engine, user_id, batch=batch, shards=shards),
        lambda: rows.purge_own_notifications(engine, user_id, batch=batch, shards=shards),
        *(
            (lambda table=table: rows.purge_simple(engine, user_id, table, batch=batch))
            for table in rows.SIMPLE_TABLES
        ),
    ]
    for step in steps:
        while await step() >= batch:
            if deadline is not None and time.monotonic() > deadline:
                return False
    await _finish(
        engine, user_id, counter_shards=counter_shards, username_hold=config.username_hold
    )
    if stores is not None:
        await forget_progress(stores, user_id)
        await stores.signals.forget_account(user_id)  # the ranked feed's signals
    return True


async def _finish(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    counter_shards: int,
    username_hold: dt.timedelta,
) -> None:
    async with unit_of_work(engine) as uow:
        conn = uow.conn
        await advisory_xact_lock(conn, "user-status")  # status changes run one at a time
        previous = await conn.scalar(_LOCK_DUE, {"u": user_id})
        if previous is None:
            return  # finished by a run beside this one
        # Take back any notification a racing write left, with unread counters.
        await add_deltas(conn, await forget_actor(conn, user_id), shards=counter_shards)
        await rows.finish_rows(conn, user_id, shards=counter_shards)
        placeholder = await _free_placeholder(conn, user_id)
        await conn.execute(
            _SCRUB, {"u": user_id, "placeholder": placeholder, "hold": username_hold}
        )
        await uow.record(UserPurged(user_id, previous))
