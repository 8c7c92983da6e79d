"""Typed errors of the identity area."""

from __future__ import annotations

import datetime as dt

from domain.errors import AuthenticationError, ConflictError, DomainError


class UsernameTakenError(ConflictError):
    """The username is taken (case-insensitively), or ``held`` for a purged account."""

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
    """The acting account is banned or deleted: refused as unauthenticated."""

    code = "UNAUTHENTICATED"

    def __init__(self) -> None:
        super().__init__("This account is not available.")


class WrongPasswordError(AuthenticationError):
    """The password confirming a sensitive change is not the account's."""

    code = "WRONG_PASSWORD"

    def __init__(self, field: str = "password") -> None:
        super().__init__("The password is incorrect.")
        self.field = field


class AccountPendingDeletionError(AuthenticationError):
    """Right password, but deletion is pending: sign in only via cancelAccountDeletion
    before ``deletion_due_at`` (docs/api/account-lifecycle.md "Account lifecycle")."""

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
    """Hourly mail budget spent (MAIL_PER_ACCOUNT_PER_HOUR); see ``retry_after_seconds``."""

    code = "RATE_LIMITED"

    def __init__(self, retry_after_seconds: int) -> None:
        super().__init__(
            f"Too many mails of this kind in the last hour; try again in {retry_after_seconds} s."
        )
        self.retry_after_seconds = retry_after_seconds
