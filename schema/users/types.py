"""The ``User`` node and its follower/following connections.

The top of the schema's areas (schema/refs.py): a User's fields reach every other
area's lists, so this module imports their connections and none of them imports it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import uuid
from typing import Annotated, Any, Literal, Self

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.identity.queries import EmailState, UserRecord, avatar_upload_state, email_state
from domain.social.queries import FollowPage, follow_list
from schema import visibility
from schema.accounts.types import DataExport, latest_data_export
from schema.context import Info
from schema.feed.connections import home_feed_connection
from schema.feed.ranked import ranked_feed_connection
from schema.feed.types import FeedConnection, FeedOrder
from schema.ids import parse_node_ids, to_global_id
from schema.loaders import UserCounts
from schema.media.types import Avatar, AvatarUploadStatus, PendingAvatar
from schema.mutes.connections import blocked_users_connection, muted_users_connection
from schema.mutes.types import BlockedUserConnection, MutedUserConnection
from schema.notifications.connections import notifications_connection, unread_count
from schema.notifications.types import NotificationConnection
from schema.pagination import (
    BEFORE,
    DEFAULT_PAGE_SIZE,
    LAST,
    RESTRICTED,
    ListRestriction,
    Window,
    check_window,
    closed_page_info,
    cursor_encoder,
    window_info,
)
from schema.posts.connections import author_posts_connection
from schema.posts.types import PostConnection
from schema.search.connections import suggested_follows_connection
from schema.search.types import SuggestedFollowConnection
from schema.social.connections import follow_requests_connection
from schema.social.types import FollowRequestConnection

#: Why ``posts``, ``followers`` and ``following`` can be null (a private account's profile
#: and counts stay visible; its content does not).
_HIDDEN = (
    "Closed when the account is private and the viewer neither is it nor follows it, or "
    "when a block stands between them: then no edges, `hasNextPage` false and "
    "`restricted` says why (counts stay visible). Null only with an error at its path."
)

#: Why the owner-only fields are nullable: on anyone else they are null with a FORBIDDEN
#: error at their path, and the rest of the User survives.
_OWN = (
    "Only on yourself (viewer { … }): on another user it is null, with a FORBIDDEN error "
    "at its path."
)


async def _email_state(info: Info, user_id: uuid.UUID) -> EmailState:
    """The viewer's e-mail state, read once per request."""
    extra = info.context.extra
    key = f"email_state:{user_id}"
    if key not in extra:
        extra[key] = await email_state(info.context.engine, user_id)
    state: EmailState = extra[key]
    return state


#: The blank ``created_at`` of :meth:`User.id_only`.
_NO_TIME = dt.datetime.min.replace(tzinfo=dt.UTC)


@strawberry.type(description="A Roost account.")
class User(relay.Node):
    pk: relay.NodeID[str]
    username: str = strawberry.field(description="Canonical lower-case username.")
    display_name: str
    bio: str
    created_at: dt.datetime
    uid: strawberry.Private[uuid.UUID]
    is_private: bool = strawberry.field(
        default=False,
        description="A private account's posts and follow lists are visible only to its "
        "approved followers; following it sends a request that its owner approves.",
    )
    website: str | None = strawberry.field(
        default=None, description="An http(s) link the owner shows on their profile."
    )
    avatar_item: strawberry.Private[dict[str, Any] | None] = None

    # The counts when a hydration read them with the user (schema.feed.connections: a feed's
    # authors); None: the count fields ask the dataloader.
    counts: strawberry.Private[UserCounts | None] = None

    @classmethod
    def from_record(cls, rec: UserRecord, *, counts: UserCounts | None = None) -> Self:
        """Build the GraphQL object from a domain record (and its counts, if read)."""
        return cls(
            pk=str(rec.id),
            username=rec.username,
            display_name=rec.display_name,
            bio=rec.bio,
            created_at=rec.created_at,
            uid=rec.id,
            is_private=rec.is_private,
            website=rec.website,
            avatar_item=rec.avatar,
            counts=counts,
        )

    @classmethod
    def id_only(cls, user_id: uuid.UUID) -> Self:
        """A User that carries only its id: for a selection that reads nothing else of the
        account (Query.viewer's ``VIEWER_ID_FIELDS``); its profile fields are blank."""
        return cls(
            pk=str(user_id), username="", display_name="", bio="", created_at=_NO_TIME, uid=user_id
        )

    @strawberry.field(
        description="The account's picture (null: none); read with the account, so a page "
        "of users costs no statement more."
    )
    def avatar(self, info: Info) -> Avatar | None:
        if not self.avatar_item:
            return None
        media = info.context.media
        return Avatar.of(self.avatar_item, media.store.public_url if media else None)

    async def restriction(self, info: Info) -> ListRestriction | None:
        """Why the viewer may not read this user's posts and follow lists (None: they
        may; the rule of :meth:`content_visible`)."""
        if await self.content_visible(info):
            return None
        loader = info.context.loaders.block_with_viewer
        if loader is not None and await loader.load(self.uid):
            return ListRestriction.BLOCKED
        return ListRestriction.PRIVATE_ACCOUNT

    async def _total(self, info: Info, kind: str) -> int:
        if self.counts is not None:
            return int(getattr(self.counts, kind))
        return await self._load_count(info, kind)

    async def content_visible(self, info: Info) -> bool:
        """Whether the viewer may see this user's posts and follow lists (the rule of
        schema.visibility: no block either way, and public, the viewer's own, or
        followed)."""
        return await visibility.content_visible(info.context, self.uid)

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: accounts whose profile the viewer may see (banned
        and deleted ones are null; a profile reached directly stays across a block)."""
        records = await visibility.accounts(info.context, parse_node_ids(node_ids))
        return [cls.from_record(rec) if rec else None for rec in records]

    # The count resolvers are plain functions: the value when the counts came with the
    # user, else an awaitable of it (graphql-core awaits what a resolver returns).

    @strawberry.field(
        description="Live followers, exact, O(1) to read: as many as `followers` lists for "
        "you (no banned or deleted account, nobody on the other side of a block)."
    )
    def follower_count(self, info: Info) -> int:
        if self.counts is not None:
            return self.counts.followers
        return self._load_count(info, "followers")  # type: ignore[return-value]

    @strawberry.field(
        description="Live followees, exact, O(1) to read: as many as `following` lists for you."
    )
    def following_count(self, info: Info) -> int:
        if self.counts is not None:
            return self.counts.following
        return self._load_count(info, "following")  # type: ignore[return-value]

    @strawberry.field(description="Live posts, exact, O(1) to read.")
    def post_count(self, info: Info) -> int:
        if self.counts is not None:
            return self.counts.posts
        return self._load_count(info, "posts")  # type: ignore[return-value]

    async def _load_count(self, info: Info, kind: str) -> int:
        return getattr(await info.context.loaders.counts_by_user_id.load(self.uid), kind)

    @strawberry.field(description="This user's posts, newest first. " + _HIDDEN)
    async def posts(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> PostConnection | None:
        window = check_window(
            first, after, last, before, info.context.limits.max_page_size, ("posts", self.uid)
        )
        if (why := await self.restriction(info)) is not None:
            return PostConnection(
                edges=[],
                page_info=closed_page_info(),
                total_count=await self._total(info, "posts"),
                restricted=why,
            )
        return await author_posts_connection(info, self.uid, window)

    @strawberry.field(
        description="The home feed: your posts and those of whom you follow, newest first "
        "(order: RANKED ranks them; a cursor only works in the order that issued it). " + _OWN
    )
    async def feed(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        order: FeedOrder = FeedOrder.RECENT,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> FeedConnection | None:
        self._require_self(info, "feed")
        if order is FeedOrder.RANKED:
            return await ranked_feed_connection(info, first, after, last, before)
        ctx = info.context
        of = ("feed", ctx.require_viewer())
        window = check_window(first, after, last, before, ctx.limits.max_page_size, of)
        return await home_feed_connection(info, window)

    @strawberry.field(description="Your notifications, newest first. " + _OWN)
    async def notifications(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> NotificationConnection | None:
        self._require_self(info, "notifications")
        window = check_window(
            first,
            after,
            last,
            before,
            info.context.limits.max_page_size,
            ("notifications", self.uid),
        )
        return await notifications_connection(info, self.uid, window)

    @strawberry.field(description="Your unread notifications, exact. " + _OWN)
    async def unread_notification_count(self, info: Info) -> int | None:

        self._require_self(info, "unreadNotificationCount")
        return await unread_count(info, self.uid)

    @strawberry.field(
        description="Accounts followed by people you follow, those most of them follow "
        "first; never yourself, whom you follow or asked to follow, blocked, banned or "
        "deleted accounts. " + _OWN
    )
    async def suggested_follows(
        self, info: Info, first: int | None = DEFAULT_PAGE_SIZE, after: str | None = None
    ) -> SuggestedFollowConnection | None:
        self._require_self(info, "suggestedFollows")
        return await suggested_follows_connection(info, self.uid, first, after)

    @strawberry.field(description="Accounts you blocked, newest first. " + _OWN)
    async def blocked_users(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> BlockedUserConnection | None:
        self._require_self(info, "blockedUsers")
        window = check_window(
            first, after, last, before, info.context.limits.max_page_size, ("blocked", self.uid)
        )
        return await blocked_users_connection(info, self.uid, window)

    @strawberry.field(description="Accounts you muted, newest first. " + _OWN)
    async def muted_users(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> MutedUserConnection | None:
        self._require_self(info, "mutedUsers")
        window = check_window(
            first, after, last, before, info.context.limits.max_page_size, ("muted", self.uid)
        )
        return await muted_users_connection(info, self.uid, window)

    @strawberry.field(
        description="Your latest data export (exportMyData), until its archive expires; "
        "null if none. " + _OWN
    )
    async def data_export(self, info: Info) -> DataExport | None:

        self._require_self(info, "dataExport")
        return await latest_data_export(info, self.uid)

    @strawberry.field(
        description="The avatar upload you chose last (updateProfile's avatarUploadId), "
        "while it is not your avatar yet: processing, or why it was refused; null when "
        "none. " + _OWN
    )
    async def pending_avatar(self, info: Info) -> PendingAvatar | None:

        self._require_self(info, "pendingAvatar")
        state = await avatar_upload_state(info.context.engine, self.uid)
        if state is None or state.state not in ("processing", "failed"):
            return None
        return PendingAvatar(
            upload_id=strawberry.ID(to_global_id("MediaUpload", state.upload_id)),
            status=AvatarUploadStatus(state.state),
            failure_reason=state.failure_reason,
        )

    @strawberry.field(description="Your e-mail address (null if you have none). " + _OWN)
    async def email(self, info: Info) -> str | None:

        self._require_self(info, "email")
        return (await _email_state(info, self.uid)).email

    @strawberry.field(
        description="Whether your e-mail address is verified (verifyEmail; false without "
        "one). " + _OWN
    )
    async def email_verified(self, info: Info) -> bool | None:

        self._require_self(info, "emailVerified")
        return (await _email_state(info, self.uid)).verified

    def _require_self(self, info: Info, field: str) -> None:
        if info.context.viewer_id != self.uid:
            raise GraphQLError(
                f"Only your own {field} can be read (viewer {{ {field} }}).",
                extensions={"code": "FORBIDDEN"},
            )

    @strawberry.field(description="Whether the viewer follows this user (false when anonymous).")
    async def followed_by_viewer(self, info: Info) -> bool:
        loader = info.context.loaders.viewer_follows
        return bool(loader and await loader.load(self.uid))

    @strawberry.field(description="Whether this user follows the viewer (false when anonymous).")
    async def follows_viewer(self, info: Info) -> bool:
        loader = info.context.loaders.follows_viewer
        return bool(loader and await loader.load(self.uid))

    @strawberry.field(description="Whether a block stands between the viewer and this user.")
    async def blocked_with_viewer(self, info: Info) -> bool:
        loader = info.context.loaders.block_with_viewer
        return bool(loader and await loader.load(self.uid))

    @strawberry.field(
        description="Whether the viewer muted this user (false when anonymous); they cannot tell."
    )
    async def muted_by_viewer(self, info: Info) -> bool:
        loader = info.context.loaders.viewer_mutes
        return bool(loader and await loader.load(self.uid))

    @strawberry.field(
        description="Whether the viewer's follow request to this private account awaits "
        "approval (false when anonymous)."
    )
    async def follow_requested_by_viewer(self, info: Info) -> bool:
        loader = info.context.loaders.viewer_requested
        return bool(loader and await loader.load(self.uid))

    @strawberry.field(description="Pending requests to follow you, newest first. " + _OWN)
    async def follow_requests(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> FollowRequestConnection | None:
        self._require_self(info, "followRequests")
        window = check_window(
            first,
            after,
            last,
            before,
            info.context.limits.max_page_size,
            ("followRequests", self.uid),
        )
        return await follow_requests_connection(info, self.uid, window)

    @strawberry.field(description="Who follows this user, newest follow first. " + _HIDDEN)
    async def followers(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> UserConnection | None:
        return await self._follow_list(info, "followers", first, after, last, before)

    @strawberry.field(description="Whom this user follows, newest follow first. " + _HIDDEN)
    async def following(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> UserConnection | None:
        return await self._follow_list(info, "following", first, after, last, before)

    async def _follow_list(
        self,
        info: Info,
        kind: Literal["followers", "following"],
        first: int | None,
        after: str | None,
        last: int | None,
        before: str | None,
    ) -> UserConnection:
        """``followers`` or ``following`` (``kind``): its page, or a closed list."""
        window = check_window(
            first, after, last, before, info.context.limits.max_page_size, (kind, self.uid)
        )
        if (why := await self.restriction(info)) is not None:
            return UserConnection(
                edges=[],
                page_info=closed_page_info(),
                total_count=await self._total(info, kind),
                restricted=why,
            )
        return await _follow_connection(info, kind, self.uid, window)


@strawberry.type(description="A user in a follow list; the cursor is the follow's position.")
class UserEdge:
    cursor: str
    node: User


@strawberry.type(description="A page of users (Relay connection).")
class UserConnection:
    edges: list[UserEdge]
    page_info: relay.PageInfo
    total_count: int = strawberry.field(
        description="All entries of the list you can page through, exact (on a closed "
        "list: the count the profile shows)."
    )
    restricted: ListRestriction | None = strawberry.field(default=None, description=RESTRICTED)


async def _follow_connection(
    info: Info,
    direction: Literal["followers", "following"],
    user_id: uuid.UUID,
    window: Window,
) -> UserConnection:
    ctx = info.context
    async with ctx.engine.connect() as conn:
        page: FollowPage = await follow_list(
            conn,
            direction,
            user_id,
            first=window.size,
            after=window.position,
            viewer_id=ctx.viewer_id,
            backward=window.backward,
        )
    records, counts = await asyncio.gather(
        visibility.accounts(ctx, [e.user_id for e in page.edges], listed=True),
        ctx.loaders.counts_by_user_id.load(user_id),
    )
    encode = cursor_encoder((direction, user_id))
    edges = [
        UserEdge(cursor=encode(e.position), node=User.from_record(rec))
        for e, rec in zip(page.edges, records, strict=True)
        if rec is not None
    ]
    return UserConnection(
        edges=edges,
        page_info=window_info([e.cursor for e in edges], page.has_next, window),
        total_count=counts.followers if direction == "followers" else counts.following,
    )
