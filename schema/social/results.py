"""Payloads and result unions of the follow-graph mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import (
    BlockedError,
    CannotBlockSelfError,
    CannotFollowSelfError,
    NotFoundError,
    UserUnavailableError,
    ValidationError,
)
from schema.refs import BothSides


@strawberry.type(description="You follow `user` now (also when you already did).")
class FollowSuccess(BothSides):
    pass


@strawberry.type(
    description="`user` is private: your follow request awaits their approval (also when "
    "it already did)."
)
class FollowRequestedSuccess(BothSides):
    pass


@strawberry.type(
    description="You do not follow `user` now, and no request of yours to them is pending "
    "(also when none was)."
)
class UnfollowSuccess(BothSides):
    pass


@strawberry.type(description="`user` is blocked; follows both ways were ended.")
class BlockSuccess(BothSides):
    pass


@strawberry.type(description="`user` is no longer blocked.")
class UnblockSuccess(BothSides):
    pass


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
class ApproveFollowRequestSuccess(BothSides):
    pass


@strawberry.type(description="`user`'s follow request is rejected; they may ask again.")
class RejectFollowRequestSuccess(BothSides):
    pass


ApproveFollowRequestResult = Annotated[
    ApproveFollowRequestSuccess | ValidationError | NotFoundError | UserUnavailableError,
    strawberry.union("ApproveFollowRequestResult"),
]
RejectFollowRequestResult = Annotated[
    RejectFollowRequestSuccess | ValidationError | NotFoundError,
    strawberry.union("RejectFollowRequestResult"),
]
