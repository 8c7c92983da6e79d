"""Typed errors of moderation (docs/api/moderation.md "Reports and moderation")."""

from __future__ import annotations

from domain.errors import NotFoundError, PermissionDeniedError


class NotModeratorError(PermissionDeniedError):
    """Only a moderator may do this (list reports, ban, remove, resolve)."""

    code = "FORBIDDEN"

    def __init__(self, message: str = "Only moderators can do this.") -> None:
        super().__init__(message)


class ReportNotFoundError(NotFoundError):
    """No report has that id."""

    def __init__(self) -> None:
        super().__init__("No report has that id.")
