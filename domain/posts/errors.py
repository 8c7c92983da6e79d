"""Typed errors of the posts area."""

from __future__ import annotations

from domain.errors import NotFoundError, PermissionDeniedError


class PostNotFoundError(NotFoundError):
    """No live post has that id."""

    def __init__(self) -> None:
        super().__init__("No post has that id.")


class NotPostAuthorError(PermissionDeniedError):
    """Only a post's author may delete it."""

    code = "NOT_POST_AUTHOR"

    def __init__(self) -> None:
        super().__init__("Only the author can delete this post.")
