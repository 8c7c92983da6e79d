"""Typed errors of the posts area."""

from __future__ import annotations

import datetime as dt

from domain.errors import DomainError, NotFoundError, PermissionDeniedError


class PostNotFoundError(NotFoundError):
    """No live post has that id."""

    def __init__(self) -> None:
        super().__init__("No post has that id.")


class NotPostAuthorError(PermissionDeniedError):
    """Only a post's author may delete or edit it (``action``: ``delete`` or ``edit``)."""

    code = "NOT_POST_AUTHOR"

    def __init__(self, action: str = "delete") -> None:
        super().__init__(f"Only the author can {action} this post.")


class EditWindowClosedError(DomainError):
    """The caption's edit window closed at ``editable_until``."""

    code = "EDIT_WINDOW_CLOSED"

    def __init__(self, editable_until: dt.datetime) -> None:
        super().__init__("This post can no longer be edited: its edit window has closed.")
        self.editable_until = editable_until
