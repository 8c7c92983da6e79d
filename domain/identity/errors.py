"""Typed errors of the identity area."""

from __future__ import annotations

import datetime as dt

from domain.errors import AuthenticationError, ConflictError, DomainError


class UsernameTakenError(ConflictError):
    """Another account already has this username (compared case-insensitively), or
    ``held``: a purged account had it, and it is reserved for a while."""

    code = "USERNAME_TAKEN"

    def __init__(self, username: str, *, held: bool = False) -> None:
        message = (
            f"The username '{username}' belonged to a deleted account and is reserved for now."
            if held
            else f"The username '{username}' is taken."
        )
        super().__init__("username", message)


class EmailTakenError(ConflictError):
    """Another account already uses this e-mail address."""

    code = "EMAIL_TAKEN"

    def __init__(self) -> None:
        super().__init__("email", "That e-mail address is already registered.")


class InvalidCredentialsError(AuthenticationError):
    """Username or password is wrong (deliberately not saying which)."""

    code = "INVALID_CREDENTIALS"

    def __init__(self) -> None:
        super().__init__("The username or password is incorrect.")


class InvalidTokenError(AuthenticationError):
    """A token is malformed, forged, expired or revoked."""

    code = "INVALID_TOKEN"

    def __init__(self, message: str = "The token is invalid, expired or revoked.") -> None:
        super().__init__(message)


class AccountUnavailableError(AuthenticationError):
    """The acting account is banned or deleted (a use case that checks its actor found
    it so): the request is refused as unauthenticated, whatever the operation."""

    code = "UNAUTHENTICATED"

    def __init__(self) -> None:
        super().__init__("This account is not available.")


class WrongPasswordError(AuthenticationError):
    """The password given to confirm a sensitive change (changePassword, deleteAccount)
    is not the account's."""

    code = "WRONG_PASSWORD"

    def __init__(self, field: str = "password") -> None:
        super().__init__("The password is incorrect.")
        self.field = field


class AccountPendingDeletionError(AuthenticationError):
    """The password is right, but the owner asked to delete the account: it signs in
    again only by cancelling the deletion (cancelAccountDeletion) before
    ``deletion_due_at`` (docs/api/account-lifecycle.md "Account lifecycle")."""

    code = "ACCOUNT_PENDING_DELETION"

    def __init__(self, deletion_due_at: dt.datetime) -> None:
        super().__init__(
            "This account is scheduled for deletion; cancel the deletion to sign in again."
        )
        self.deletion_due_at = deletion_due_at


class EmailAlreadyVerifiedError(DomainError):
    """requestEmailVerification of an account whose address is verified already."""

    code = "EMAIL_ALREADY_VERIFIED"

    def __init__(self) -> None:
        super().__init__("Your e-mail address is verified already.")


class TooManyMailsError(DomainError):
    """The account received its hourly budget of mails of this kind
    (MAIL_PER_ACCOUNT_PER_HOUR); ``retry_after_seconds`` until the next may go out."""

    code = "RATE_LIMITED"

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(
            f"Too many mails of this kind in the last hour; try again in {retry_after_seconds} s."
        )
        self.retry_after_seconds = retry_after_seconds
