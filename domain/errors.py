"""Typed domain errors, each with a stable ``code`` and a human ``message``; the GraphQL
layer maps each to an ``Error`` union member (docs/api/errors.md)."""

from __future__ import annotations


class DomainError(Exception):
    """Base of every expected, typed failure of a use case; changes nothing when raised."""

    code: str = "DOMAIN_ERROR"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(DomainError):
    """Input breaks a rule of docs/design.md "Decided details"; ``field`` names the input field."""

    code = "VALIDATION_FAILED"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(DomainError):
    """The referenced object does not exist (or is not visible to the viewer)."""

    code = "NOT_FOUND"


class ConflictError(DomainError):
    """A uniqueness rule refused the write (``field`` names what is taken)."""

    code = "CONFLICT"

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class AuthenticationError(DomainError):
    """Credentials or a token were wrong, expired or revoked."""

    code = "INVALID_CREDENTIALS"


class PermissionDeniedError(DomainError):
    """The actor may not do this to the target (self-follow, blocked, banned target, …)."""

    code = "FORBIDDEN"


class StoreError(Exception):
    """A store behind a port failed (the driver's error is ``__cause__``)."""
