"""Use case: purge the personal data of an account whose deletion is due
(docs/api/account-lifecycle.md "Account lifecycle"); the worker runs
:func:`purge_due_accounts` periodically. Idempotent and resumable: each step is one
batch in its own transaction, the Redis step runs first and keeps its place, and only
the last transaction marks the account purged.
"""

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

#: An account is due when its deletion was asked (or an operator deleted it while it
#: was) and its grace period is over, until its purge finished.
_DUE = """
    deletion_due_at <= now() AND purged_at IS NULL
    AND status IN ('pending_deletion', 'deleted')
"""
_DUE_ACCOUNTS = text(f"SELECT id FROM users WHERE {_DUE} ORDER BY deletion_due_at, id LIMIT :n")
_IS_DUE = text(f"SELECT EXISTS (SELECT 1 FROM users WHERE id = :u AND {_DUE})")
_LOCK_DUE = text(f"SELECT status FROM users WHERE id = :u AND {_DUE} FOR UPDATE")

#: What is left of the account: a row that keeps the ids others' history may name, with
#: placeholders for everything personal. Its username is held (released_usernames) for
#: ``AccountsConfig.username_hold``, then free again for anyone.
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
    """Forget the usernames whose hold is over (sign-up no longer asks about them);
    return how many."""
    async with engine.begin() as conn:
        result = await conn.execute(_PRUNE_RELEASED)
    return result.rowcount or 0


def placeholder_username(user_id: uuid.UUID) -> str:
    """``deleted.<22 hex digits of the id>``: a valid username (30 characters) that
    names nobody; sign-up refuses the ``deleted.`` prefix (domain.text.new_username)."""
    return TOMBSTONE_PREFIX + user_id.hex[-22:]


_TAKEN = text("SELECT EXISTS (SELECT 1 FROM users WHERE username = :n AND id <> :u)")


async def _free_placeholder(conn: AsyncConnection, user_id: uuid.UUID) -> str:
    """The account's placeholder username, or, when another row holds it (an account
    signed up with it before the prefix was reserved, or two ids sharing their last 22
    hex digits), ``deleted.`` and 22 random hex digits that no row holds. The caller
    holds the status-change lock, under which every purge renames."""
    name = placeholder_username(user_id)
    while await conn.scalar(_TAKEN, {"n": name, "u": user_id}):
        name = TOMBSTONE_PREFIX + uuid.uuid4().hex[:22]
    return name


@dataclass(frozen=True)
class PurgeRun:
    """What one run of :func:`purge_due_accounts` did: accounts purged to the end,
    whether it stopped at its deadline with work left, and the accounts whose purge
    failed (retried by the next run)."""

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
    """Purge up to ``limit`` due accounts, oldest due first, until ``deadline``
    (``time.monotonic()``; None: none). An account's failure is logged, listed in
    ``failed`` and skipped. Raises DBAPIError for the list itself."""
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
    """Purge one account if its deletion is due: Redis feeds (``stores``), media
    (``media_store``), its rows batch by batch, then the tombstone and ``user.purged``
    in one transaction. True when purged (or not due), False when ``deadline`` passed
    first (call again to resume)."""
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
        # Nothing should be left that it notified anyone of; if a write raced the
        # status change, this takes it back with the unread counters.
        await add_deltas(conn, await forget_actor(conn, user_id), shards=counter_shards)
        await rows.finish_rows(conn, user_id, shards=counter_shards)
        placeholder = await _free_placeholder(conn, user_id)
        await conn.execute(
            _SCRUB, {"u": user_id, "placeholder": placeholder, "hold": username_hold}
        )
        await uow.record(UserPurged(user_id, previous))
