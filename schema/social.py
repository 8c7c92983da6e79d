"""Inputs, payloads and result unions of the follow-graph mutations."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Annotated

import strawberry
from strawberry import relay

from domain.social.queries import follow_request_list
from schema import visibility
from schema.errors import (
    BlockedError,
    CannotBlockSelfError,
    CannotFollowSelfError,
    NotFoundError,
    UserUnavailableError,
    ValidationError,
)
from schema.pagination import check_first, decode_cursor, encode_cursor, page_info
from schema.users import Info, User


@strawberry.input(description="The user to follow, unfollow, block or unblock.")
class UserTargetInput:
    user_id: strawberry.ID = strawberry.field(description="A User global id.")


@strawberry.type(description="You follow `user` now (also when you already did).")
class FollowSuccess:
    user: User


@strawberry.type(
    description="`user` is private: your follow request awaits their approval (also when "
    "it already did)."
)
class FollowRequestedSuccess:
    user: User


@strawberry.type(
    description="You do not follow `user` now, and no request of yours to them is pending "
    "(also when none was)."
)
class UnfollowSuccess:
    user: User


@strawberry.type(description="`user` is blocked; follows both ways were ended.")
class BlockSuccess:
    user: User


@strawberry.type(description="`user` is no longer blocked.")
class UnblockSuccess:
    user: User


FollowResult = Annotated[
    FollowSuccess
    | FollowRequestedSuccess
    | ValidationError
    | NotFoundError
    | CannotFollowSelfError
    | UserUnavailableError
    | BlockedError,
    strawberry.union("FollowResult"),
]
UnfollowResult = Annotated[
    UnfollowSuccess | ValidationError | NotFoundError | CannotFollowSelfError,
    strawberry.union("UnfollowResult"),
]
BlockResult = Annotated[
    BlockSuccess | ValidationError | NotFoundError | CannotBlockSelfError,
    strawberry.union("BlockResult"),
]
UnblockResult = Annotated[
    UnblockSuccess | ValidationError | NotFoundError | CannotBlockSelfError,
    strawberry.union("UnblockResult"),
]


@strawberry.type(description="`user` follows you now (also when the request was already approved).")
class ApproveFollowRequestSuccess:
    user: User


@strawberry.type(description="`user`'s follow request is rejected; they may ask again.")
class RejectFollowRequestSuccess:
    user: User


ApproveFollowRequestResult = Annotated[
    ApproveFollowRequestSuccess | ValidationError | NotFoundError | UserUnavailableError,
    strawberry.union("ApproveFollowRequestResult"),
]
RejectFollowRequestResult = Annotated[
    RejectFollowRequestSuccess | ValidationError | NotFoundError,
    strawberry.union("RejectFollowRequestResult"),
]


@strawberry.type(description="A pending follow request; the cursor is the request's position.")
class FollowRequestEdge:
    cursor: str
    node: User = strawberry.field(description="Who asks to follow you.")
    requested_at: dt.datetime


@strawberry.type(description="A page of pending follow requests, newest first (Relay connection).")
class FollowRequestConnection:
    edges: list[FollowRequestEdge]
    page_info: relay.PageInfo


async def follow_requests_connection(
    info: Info, target_id: uuid.UUID, first: int, after: str | None
) -> FollowRequestConnection:
    """``viewer.followRequests``: keyset pages of the pending requests to ``target_id``
    (one statement for the page, one batch for the requesters)."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    position = decode_cursor(after) if after else None
    async with ctx.engine.connect() as conn:
        page = await follow_request_list(conn, target_id, first=first, after=position)
    records = await visibility.accounts(ctx, [e.user_id for e in page.edges], listed=True)
    edges = [
        FollowRequestEdge(
            cursor=encode_cursor(e.position), node=User.from_record(rec), requested_at=e.position[0]
        )
        for e, rec in zip(page.edges, records, strict=True)
        if rec is not None
    ]
    return FollowRequestConnection(
        edges=edges,
        page_info=page_info([e.cursor for e in edges], page.has_next, after),
    )
