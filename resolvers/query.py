"""Root query fields."""

from __future__ import annotations

import strawberry
from strawberry import relay

from domain.errors import ValidationError
from domain.identity.queries import user_by_username
from domain.text import normalize_username
from schema.users import Info, User


async def visible_user(info: Info, user_id) -> User | None:
    """Return the User for ``user_id`` unless it is missing, banned or deleted."""
    rec = await info.context.loaders.user_by_id.load(user_id)
    return User.from_record(rec) if rec and rec.is_visible else None


@strawberry.type
class Query:
    node: relay.Node | None = relay.node(description="Fetch any object by its global id.")
    nodes: list[relay.Node | None] = relay.node(description="Fetch objects by global ids.")

    @strawberry.field(description="The signed-in user, or null when anonymous.")
    async def viewer(self, info: Info) -> User | None:
        viewer_id = info.context.viewer_id
        return await visible_user(info, viewer_id) if viewer_id else None

    @strawberry.field(description="Look a user up by username (case-insensitive).")
    async def user(self, info: Info, username: str) -> User | None:
        try:
            canonical = normalize_username(username)
        except ValidationError:
            return None  # no account can have such a name
        async with info.context.engine.connect() as conn:
            rec = await user_by_username(conn, canonical)
        if rec is None or not rec.is_visible:
            return None
        info.context.loaders.user_by_id.prime(rec.id, rec)
        return User.from_record(rec)
