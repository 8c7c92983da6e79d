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
