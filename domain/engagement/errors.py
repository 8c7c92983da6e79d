"""Typed errors of likes and comments."""

from __future__ import annotations

from domain.errors import NotFoundError, PermissionDeniedError


class CommentNotFoundError(NotFoundError):
    """No live comment has that id (or the viewer cannot see its post)."""

    def __init__(self) -> None:
        super().__init__("No comment has that id.")


class NotCommentModeratorError(PermissionDeniedError):
    """Only a comment's author or the post's author may delete it."""

    code = "NOT_COMMENT_MODERATOR"

    def __init__(self) -> None:
        super().__init__("Only the comment's author or the post's author can delete it.")
