"""Use case: the author edits a caption within the edit window; the old one goes to the history."""

from __future__ import annotations

import datetime as dt
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.db import new_id
from domain.engagement.hashtags import retag_post
from domain.errors import ValidationError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostEdited
from domain.outbox.unit_of_work import unit_of_work
from domain.posts.errors import EditWindowClosedError, NotPostAuthorError, PostNotFoundError
from domain.posts.queries import POST_COLUMNS, PostRecord, to_post
from domain.posts.visibility import require_visible_post
from domain.text import CAPTION_MAX, clean_text
from domain.visibility.predicates import is_live

#: The default edit window: a day after the post was created.
DEFAULT_EDIT_WINDOW_S = 86_400

_LOCK = text(
    "SELECT caption, media, state, created_at, edited_at, clock_timestamp() AS now FROM posts"
    f" WHERE id = :id AND {is_live()} FOR UPDATE"
)
_REVISION = text(
    "INSERT INTO post_revisions (id, post_id, caption, written_at, replaced_at)"
    " VALUES (:id, :post, :caption, :written, :now)"
)
_UPDATE = text(
    f"UPDATE posts SET caption = :caption, edited_at = :now WHERE id = :post"
    f" RETURNING {POST_COLUMNS}"
)


async def edit_post(
    engine: AsyncEngine,
    actor_id: uuid.UUID,
    post_id: uuid.UUID,
    caption: str,
    *,
    window_s: int = DEFAULT_EDIT_WINDOW_S,
    dispatcher: Dispatcher | None = None,
) -> PostRecord:
    """Replace the caption of ``post_id`` by its author within ``window_s`` seconds of creation
    (database clock), under the row lock: the old caption to ``post_revisions``, ``edited_at`` set,
    hashtags retagged, ``post.edited`` if published. ``created_at`` does not move; the same caption
    changes nothing. Raises PostNotFoundError, NotPostAuthorError, EditWindowClosedError or
    ValidationError("caption") (docs/design.md "Decided details"; empty only with media)."""
    caption = clean_text("caption", caption, max_len=CAPTION_MAX)
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        # Unlocked read, then FOR UPDATE: a share lock first would deadlock two edits on upgrade.
        post = await require_visible_post(conn, post_id, actor_id)
        if post.author_id != actor_id:
            raise NotPostAuthorError("edit")
        row = (await conn.execute(_LOCK, {"id": post_id})).first()
        if row is None:  # deleted meanwhile
            raise PostNotFoundError()
        editable_until = row.created_at + dt.timedelta(seconds=window_s)
        if row.now > editable_until:
            raise EditWindowClosedError(editable_until)
        if caption == row.caption:
            return post
        if not caption.strip() and not row.media and row.state != "processing":
            raise ValidationError("caption", "A post needs a caption or media.")
        await conn.execute(
            _REVISION,
            {
                "id": new_id(),
                "post": post_id,
                "caption": row.caption,
                "written": row.edited_at or row.created_at,
                "now": row.now,
            },
        )
        edited = to_post(
            (
                await conn.execute(_UPDATE, {"caption": caption, "now": row.now, "post": post_id})
            ).one()
        )
        await retag_post(conn, post_id, row.created_at, caption)
        if row.state == "published":
            await uow.record(PostEdited(post_id, actor_id))
    return edited
