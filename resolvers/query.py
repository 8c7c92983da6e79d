"""Root query fields."""

from __future__ import annotations

import inspect

import strawberry
from strawberry import relay

from domain.engagement.hashtags import tag_named
from domain.errors import ValidationError
from domain.identity.queries import user_by_username
from domain.text import normalize_username
from resolvers.moderation import moderation_root
from schema import visibility
from schema.accounts.types import DataExport
from schema.context import Info
from schema.engagement.types import Comment
from schema.explore.connections import (
    TRENDING_HASHTAGS,
    explore_connection,
    trending_hashtags_list,
)
from schema.explore.hashtags import Hashtag
from schema.explore.types import ExploreConnection, TrendingHashtag
from schema.feed.selection import subfield_names
from schema.ids import check_node_ids, parse_global_id
from schema.media.types import MediaKind
from schema.moderation.results import ModerationResult
from schema.moderation.types import Report
from schema.notifications.types import Notification
from schema.pagination import DEFAULT_PAGE_SIZE
from schema.posts.types import Post
from schema.search.connections import search_users_connection
from schema.search.types import UserSearchConnection
from schema.users.types import User

#: The viewer's fields that need nothing of the account but its id: with ``feed`` among
#: them, ``viewer`` reads no row (the rest do).
VIEWER_ID_FIELDS = frozenset({"id", "__typename", "feed"})


async def visible_user(info: Info, user_id) -> User | None:
    """Return the User for ``user_id`` if the viewer may see its profile (not missing,
    banned or deleted; schema.visibility.accounts)."""
    (rec,) = await visibility.accounts(info.context, [user_id])
    return User.from_record(rec) if rec else None


#: Node types that ``node``/``nodes`` can fetch, by GraphQL type name.
NODE_TYPES: dict[str, type[relay.Node]] = {
    "User": User,
    "Post": Post,
    "Comment": Comment,
    "Notification": Notification,
    "Report": Report,
    "DataExport": DataExport,
    "Hashtag": Hashtag,
}


async def resolve_nodes(info: Info, ids: list[str]) -> list[relay.Node | None]:
    """Resolve global ids (with or without their base64 padding), batched per type; an id
    that is malformed, of an unknown type, not found or not for the viewer resolves to
    null (Relay's node contract)."""
    wanted: dict[type[relay.Node], list[tuple[int, str]]] = {}
    for i, raw in enumerate(ids):
        try:
            type_name, node_id = parse_global_id(raw)
        except ValueError:
            continue
        node_type = NODE_TYPES.get(type_name)
        if node_type is not None:
            wanted.setdefault(node_type, []).append((i, node_id))
    out: list[relay.Node | None] = [None] * len(ids)
    for node_type, items in wanted.items():
        found = node_type.resolve_nodes(info=info, node_ids=[pk for _, pk in items])
        if inspect.isawaitable(found):  # Strawberry's contract allows either; ours are async
            found = await found
        for (i, _), node in zip(items, found, strict=True):
            out[i] = node
    return out


@strawberry.type
class Query:
    @strawberry.field(description="Fetch any object by its global id (null if not found).")
    async def node(self, info: Info, id: strawberry.ID) -> relay.Node | None:
        return (await resolve_nodes(info, [id]))[0]

    @strawberry.field(
        description="Fetch objects by global ids (at most 100), in order (null if not found)."
    )
    async def nodes(self, info: Info, ids: list[strawberry.ID]) -> list[relay.Node | None]:
        return await resolve_nodes(info, check_node_ids(ids))

    @strawberry.field(description="The signed-in user, or null when anonymous.")
    async def viewer(self, info: Info) -> User | None:
        viewer_id = info.context.viewer_id
        if viewer_id is None:
            return None
        asked = subfield_names(info)
        if "feed" in asked and asked <= VIEWER_ID_FIELDS:
            # Nothing of the account is read: its admitted session vouches that it may act,
            # and the page's hydration checks it (schema.feed.connections.page_posts).
            return User.id_only(viewer_id)
        return await visible_user(info, viewer_id)

    @strawberry.field(description="Look a user up by username (case-insensitive).")
    async def user(self, info: Info, username: str) -> User | None:
        try:
            canonical = normalize_username(username)
        except ValidationError:
            return None  # no account can have such a name
        async with info.context.engine.connect() as conn:
            rec = await user_by_username(conn, canonical)
        if rec is None:
            return None
        info.context.loaders.user_by_id.prime(rec.id, rec)
        return await visible_user(info, rec.id)

    @strawberry.field(
        description="People whose username or display name matches `query` (prefix, words "
        "or typos), best match first, then the most followed. Blocked accounts (either "
        "way), banned and deleted ones are left out. The ranking is frozen on the first "
        "page for 10 minutes, so the next pages never repeat or skip anyone."
    )
    async def search_users(
        self,
        info: Info,
        query: str,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
    ) -> UserSearchConnection:
        return await search_users_connection(info, query, first, after)

    @strawberry.field(
        description="Reports and moderation, for moderators only: anyone else gets a "
        "ForbiddenError (code FORBIDDEN)."
    )
    async def moderation(self, info: Info) -> ModerationResult:
        return await moderation_root(info)

    @strawberry.field(
        description="Trending posts for you (signed in): the most liked and commented on "
        "of the last 24 hours, by accounts you do not follow first, then by those you do, "
        "each part ranked for you (engagement, age with a 24-hour half-life, authors you "
        "engaged with x1.5, the media kind you mostly engage with x1.2). Never your own "
        "posts, nor those of accounts you muted or that are blocked either way, banned, "
        "deleted, or private and not followed. `kind: VIDEO` keeps video posts (`IMAGE`: "
        "posts with images and no video). The order is frozen for the pages of one walk; "
        "a cursor idle longer than FEED_RANKED_FREEZE_S fails CURSOR_EXPIRED."
    )
    async def explore(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        kind: MediaKind | None = None,
    ) -> ExploreConnection | None:
        return await explore_connection(info, first, after, kind)

    @strawberry.field(
        description="Hashtags trending for you (signed in): the tags of the trending posts "
        "explore may show you, by those posts' likes and comments of the last 24 hours "
        "(on posts of accounts you do not follow first); the same exclusions as explore."
    )
    async def trending_hashtags(
        self, info: Info, first: int | None = TRENDING_HASHTAGS
    ) -> list[TrendingHashtag] | None:
        return await trending_hashtags_list(info, first)

    @strawberry.field(
        description="A hashtag by name (any case; '#' optional); null when the name is not one tag."
    )
    def hashtag(self, name: str) -> Hashtag | None:
        tag = tag_named(name)
        return Hashtag.named(tag) if tag else None
