"""Payloads and result unions of the mute and unmute mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from schema.errors import CannotMuteSelfError, NotFoundError, ValidationError
from schema.refs import BothSides


@strawberry.type(
    description="`user` is muted: their posts stay out of your home feed and their "
    "notifications out of yours (what they notified you of is removed); you still follow "
    "them, and nothing shows on their side. Also when they already were."
)
class MuteSuccess(BothSides):
    pass


@strawberry.type(description="`user` is no longer muted (also when they were not).")
class UnmuteSuccess(BothSides):
    pass


MuteResult = Annotated[
    MuteSuccess | ValidationError | NotFoundError | CannotMuteSelfError,
    strawberry.union("MuteResult"),
]
UnmuteResult = Annotated[
    UnmuteSuccess | ValidationError | NotFoundError | CannotMuteSelfError,
    strawberry.union("UnmuteResult"),
]
