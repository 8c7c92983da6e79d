"""Inputs, payloads and result unions of the follow-graph mutations."""

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
from schema.users import User


@strawberry.input(description="The user to follow, unfollow, block or unblock.")
class UserTargetInput:
    user_id: strawberry.ID = strawberry.field(description="A User global id.")


@strawberry.type(description="You follow `user` now (also when you already did).")
class FollowSuccess:
    user: User


@strawberry.type(description="You do not follow `user` now (also when you did not before).")
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
