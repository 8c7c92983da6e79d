"""Inputs of the e-mail mutations."""

from __future__ import annotations

import strawberry


@strawberry.input
class VerifyEmailInput:
    token: str = strawberry.field(description="The code of the verification mail.")


@strawberry.input
class ChangeEmailInput:
    email: str = strawberry.field(description="The new address (unverified until its code).")
    password: str = strawberry.field(description="Your password, to confirm the change.")


@strawberry.input(description="Exactly one of `email` and `username`.")
class RequestPasswordResetInput:
    email: str | None = strawberry.field(default=None, description="The account's address.")
    username: str | None = strawberry.field(
        default=None, description="Or the account's username (any case)."
    )


@strawberry.input
class ResetPasswordInput:
    token: str = strawberry.field(description="The code of the password reset mail.")
    new_password: str = strawberry.field(description="8–256 Unicode code points.")
