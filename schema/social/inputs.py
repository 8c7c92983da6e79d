"""The input of the follow-graph mutations."""

from __future__ import annotations

import strawberry


@strawberry.input(description="The user to follow, unfollow, block or unblock.")
class UserTargetInput:
    user_id: strawberry.ID = strawberry.field(description="A User global id.")
