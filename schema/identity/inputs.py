"""Inputs of the signUp, logIn, refreshSession, logOut and updateProfile mutations."""

from __future__ import annotations

import strawberry


@strawberry.input
class SignUpInput:
    username: str = strawberry.field(description="3–30 of a-z 0-9 . _ (case-insensitive).")
    email: str
    password: str = strawberry.field(description="8–256 Unicode code points.")
    display_name: str = strawberry.field(
        description=(
            "1–50 Unicode code points (after NFC), any script; no bidirectional control characters."
        )
    )


@strawberry.input
class LogInInput:
    username: str
    password: str


@strawberry.input
class RefreshSessionInput:
    refresh_token: str


@strawberry.input
class LogOutInput:
    refresh_token: str | None = strawberry.field(
        default=None, description="The session to end; omit it to end all your sessions."
    )


@strawberry.input
class UpdateProfileInput:
    display_name: str | None = strawberry.UNSET
    bio: str | None = strawberry.UNSET
    website: str | None = strawberry.field(
        default=strawberry.UNSET,
        description="An http(s) link on a public host name, at most 200 characters "
        '(javascript:, data:, credentials, IP addresses and localhost are refused); "" '
        "removes it.",
    )
    avatar_upload_id: strawberry.ID | None = strawberry.field(
        default=strawberry.UNSET,
        description="One of your IMAGE uploads (createMediaUpload), its bytes sent: it "
        "becomes your `avatar` once processed (`pendingAvatar` says how it went; errors "
        "name it at index 0); null removes your avatar.",
    )
    is_private: bool | None = strawberry.field(
        default=strawberry.UNSET,
        description="Make the account private (true) or public (false). Going public "
        "accepts every pending follow request at once.",
    )
