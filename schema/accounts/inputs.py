"""Inputs of the changePassword, deleteAccount and cancelAccountDeletion mutations."""

from __future__ import annotations

import strawberry


@strawberry.input
class ChangePasswordInput:
    current_password: str
    new_password: str = strawberry.field(description="8–256 Unicode code points.")


@strawberry.input
class DeleteAccountInput:
    password: str = strawberry.field(description="Your current password, to confirm.")


@strawberry.input
class CancelAccountDeletionInput:
    username: str
    password: str
