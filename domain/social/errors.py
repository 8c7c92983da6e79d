"""Typed errors of the follow graph (docs/seeds/followers-following.md "Rules")."""

from __future__ import annotations

from domain.errors import NotFoundError, PermissionDeniedError


class SelfFollowError(PermissionDeniedError):
    """A user tried to follow themself (also refused by the table's CHECK)."""

    code = "CANNOT_FOLLOW_SELF"

    def __init__(self) -> None:
        super().__init__("You cannot follow yourself.")


class SelfBlockError(PermissionDeniedError):
    """A user tried to block themself."""

    code = "CANNOT_BLOCK_SELF"

    def __init__(self) -> None:
        super().__init__("You cannot block yourself.")


class UserUnavailableError(PermissionDeniedError):
    """The target (or the actor) is banned or deleted."""

    code = "USER_UNAVAILABLE"

    def __init__(self) -> None:
        super().__init__("This account is not available.")


class BlockedError(PermissionDeniedError):
    """A block stands between the two users, in either direction."""

    code = "BLOCKED"

    def __init__(self) -> None:
        super().__init__("You cannot follow this account.")


class FollowRequestNotFoundError(NotFoundError):
    """No follow request of that user to the viewer is pending."""

    def __init__(self) -> None:
        super().__init__("No follow request from this user is pending.")


class SelfMuteError(PermissionDeniedError):
    """A user tried to mute themself."""

    code = "CANNOT_MUTE_SELF"

    def __init__(self) -> None:
        super().__init__("You cannot mute yourself.")
