"""Use case: change the viewer's display name, bio, website, avatar and privacy."""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import text, update
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import utcnow
from domain.errors import NotFoundError, ValidationError
from domain.identity.models import users
from domain.identity.queries import USER_COLUMNS, UserRecord, to_record
from domain.identity.website import clean_website
from domain.media.ports import ObjectStore
from domain.media.process_post_media import delivery_keys
from domain.media.uploads import check_arrived, check_uploads, read_uploads
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import AvatarUploaded, UserUpdated
from domain.outbox.unit_of_work import UnitOfWork, unit_of_work
from domain.social.accept_follow_requests import accept_pending_requests
from domain.text import clean_bio, clean_display_name
from domain.visibility.predicates import active_clause

log = logging.getLogger("roost.identity")

#: ``avatar_upload_id`` that removes the avatar.
REMOVE = "remove"


async def update_profile(
    engine: AsyncEngine,
    user_id: uuid.UUID,
    *,
    display_name: str | None = None,
    bio: str | None = None,
    website: str | None = None,
    avatar_upload_id: uuid.UUID | str | None = None,
    is_private: bool | None = None,
    store: ObjectStore | None = None,
    counter_shards: int = 16,
    dispatcher: Dispatcher | None = None,
) -> UserRecord:
    """Set whichever of ``display_name`` (1–50), ``bio`` (0–150, NFC), ``website`` (``""`` clears)
    and ``is_private`` are given; return the user. ``avatar_upload_id``: a pending image upload
    that becomes the avatar once processed, or :data:`REMOVE`. ``is_private=False`` accepts
    pending requests. Raises ValidationError, UploadNotFoundError, UploadUnusableError or
    NotFoundError, changing nothing."""
    values: dict[str, Any] = {}
    if display_name is not None:
        values["display_name"] = clean_display_name(display_name)
    if bio is not None:
        values["bio"] = clean_bio(bio)
    if website is not None:
        values["website"] = clean_website(website)
    if is_private is not None:
        values["is_private"] = is_private
    upload = avatar_upload_id if isinstance(avatar_upload_id, uuid.UUID) else None
    if upload is not None:
        await _check_avatar(engine, store, user_id, upload)
    old_avatar = None
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        if avatar_upload_id == REMOVE:
            old_avatar = await conn.scalar(
                text("SELECT avatar FROM users WHERE id = :u FOR UPDATE"), {"u": user_id}
            )
            values["avatar"] = None
            values["avatar_upload_id"] = None
        elif upload is not None:
            await _choose_avatar(uow, user_id, upload)
            values["avatar_upload_id"] = upload
        stmt = update(users).where(users.c.id == user_id, active_clause(users))
        if not values:  # nothing to change: still answer with the current profile
            values["display_name"] = users.c.display_name
        row = (await conn.execute(stmt.values(**values).returning(*USER_COLUMNS))).first()
        if row is None:
            raise NotFoundError("The account does not exist.")
        if is_private is False:
            # After the UPDATE: it holds the row lock that request creation waits for.
            await accept_pending_requests(uow, user_id, counter_shards=counter_shards)
        await uow.record(UserUpdated(user_id, tuple(sorted(values))))
    if old_avatar and store is not None:
        try:
            await store.delete_delivery(delivery_keys([old_avatar]))
        except Exception:  # best effort: the profile no longer names them
            log.exception("deleting the removed avatar of %s failed", user_id)
    return to_record(row)


async def _check_avatar(
    engine: AsyncEngine, store: ObjectStore | None, user_id: uuid.UUID, upload: uuid.UUID
) -> None:
    if store is None:
        raise ValidationError("avatarUploadId", "This server takes no uploads.")
    async with engine.connect() as conn:
        rows = await read_uploads(conn, [upload], user_id, lock=False)
    check_uploads([upload], rows, utcnow())
    if rows[upload].kind != "image":
        raise ValidationError("avatarUploadId", "An avatar is an image upload (kind IMAGE).")
    await check_arrived(store, [upload], rows)


async def _choose_avatar(uow: UnitOfWork, user_id: uuid.UUID, upload: uuid.UUID) -> None:
    """Under the upload's lock: the upload goes ``processing`` and the media worker is told."""
    conn = uow.conn
    rows = await read_uploads(conn, [upload], user_id, lock=True)
    check_uploads([upload], rows, utcnow())
    await conn.execute(
        text("UPDATE uploads SET state = 'processing' WHERE id = :id"), {"id": upload}
    )
    await uow.record(AvatarUploaded(user_id, upload))
