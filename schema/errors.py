"""The ``Error`` interface and the typed error members of mutation result unions.

Mutations return ``<Name>Success | <SomeError> | …`` (docs/design.md "GraphQL API
conventions"); each error type here mirrors one domain error class and is built
from it by :func:`error_from_domain`.
"""

from __future__ import annotations

import datetime as dt
from enum import Enum, StrEnum
from typing import Any, overload

import strawberry

from domain import errors as d
from domain.engagement import errors as de
from domain.identity import errors as di
from domain.media import errors as dmedia
from domain.moderation import errors as dm
from domain.posts import errors as dp
from domain.social import errors as ds


@strawberry.enum(
    description="The machine-readable code of a typed error (`Error.code`); each error type "
    "has one (NotFoundError: NOT_FOUND, …). New codes may be added: treat one you do not "
    "know as a failure with its `message`."
)
class ErrorCode(Enum):
    VALIDATION_FAILED = strawberry.enum_value(
        "VALIDATION_FAILED", description="An input value breaks a rule (ValidationError)."
    )
    NOT_FOUND = strawberry.enum_value(
        "NOT_FOUND", description="No such object, or not visible to you (NotFoundError)."
    )
    USERNAME_TAKEN = strawberry.enum_value(
        "USERNAME_TAKEN", description="The username is taken (UsernameTakenError)."
    )
    EMAIL_TAKEN = strawberry.enum_value(
        "EMAIL_TAKEN", description="The e-mail address is registered (EmailTakenError)."
    )
    INVALID_CREDENTIALS = strawberry.enum_value(
        "INVALID_CREDENTIALS",
        description="Username or password is incorrect (InvalidCredentialsError).",
    )
    INVALID_TOKEN = strawberry.enum_value(
        "INVALID_TOKEN",
        description="A refresh token or e-mail code is invalid or used (InvalidTokenError).",
    )
    WRONG_PASSWORD = strawberry.enum_value(
        "WRONG_PASSWORD", description="The confirming password is wrong (WrongPasswordError)."
    )
    ACCOUNT_PENDING_DELETION = strawberry.enum_value(
        "ACCOUNT_PENDING_DELETION",
        description="The account is being deleted (AccountPendingDeletionError).",
    )
    EMAIL_ALREADY_VERIFIED = strawberry.enum_value(
        "EMAIL_ALREADY_VERIFIED",
        description="The e-mail address is verified already (EmailAlreadyVerifiedError).",
    )
    RATE_LIMITED = strawberry.enum_value(
        "RATE_LIMITED", description="Too many of these for now (TooManyMailsError)."
    )
    FORBIDDEN = strawberry.enum_value(
        "FORBIDDEN", description="You may not do this (ForbiddenError)."
    )
    CANNOT_FOLLOW_SELF = strawberry.enum_value(
        "CANNOT_FOLLOW_SELF", description="You cannot follow yourself (CannotFollowSelfError)."
    )
    CANNOT_BLOCK_SELF = strawberry.enum_value(
        "CANNOT_BLOCK_SELF", description="You cannot block yourself (CannotBlockSelfError)."
    )
    CANNOT_MUTE_SELF = strawberry.enum_value(
        "CANNOT_MUTE_SELF", description="You cannot mute yourself (CannotMuteSelfError)."
    )
    USER_UNAVAILABLE = strawberry.enum_value(
        "USER_UNAVAILABLE",
        description="The account is banned or deleted (UserUnavailableError).",
    )
    BLOCKED = strawberry.enum_value(
        "BLOCKED", description="A block stands between you and the account (BlockedError)."
    )
    NOT_POST_AUTHOR = strawberry.enum_value(
        "NOT_POST_AUTHOR", description="Only the post's author can do this (NotPostAuthorError)."
    )
    NOT_COMMENT_MODERATOR = strawberry.enum_value(
        "NOT_COMMENT_MODERATOR",
        description="Only the comment's or the post's author can (NotCommentModeratorError).",
    )
    EDIT_WINDOW_CLOSED = strawberry.enum_value(
        "EDIT_WINDOW_CLOSED",
        description="The post can no longer be edited (EditWindowClosedError).",
    )
    UPLOAD_UNUSABLE = strawberry.enum_value(
        "UPLOAD_UNUSABLE", description="An upload cannot go into a post (UploadUnusableError)."
    )
    UPLOAD_NOT_FOUND = strawberry.enum_value(
        "UPLOAD_NOT_FOUND", description="You have no upload with that id (UploadNotFoundError)."
    )
    MEDIA_URL_NOT_ALLOWED = strawberry.enum_value(
        "MEDIA_URL_NOT_ALLOWED",
        description="An external media URL not allowed here (MediaUrlNotAllowedError).",
    )


@strawberry.interface(description="A typed, expected failure of a mutation. Nothing was changed.")
class Error:
    message: str = strawberry.field(description="What went wrong, for a person to read.")
    code: ErrorCode = strawberry.field(
        description="A stable machine-readable code, e.g. NOT_FOUND (the same strings as "
        "before it was an enum)."
    )


@strawberry.type(description="An input value breaks a rule; `field` names the input field.")
class ValidationError(Error):
    field: str


@strawberry.type(description="No object with that id exists, or it is not visible to you.")
class NotFoundError(Error):
    pass


@strawberry.type(description="The username is taken (usernames compare case-insensitively).")
class UsernameTakenError(Error):
    field: str


@strawberry.type(description="The e-mail address is already registered.")
class EmailTakenError(Error):
    field: str


@strawberry.type(description="Username or password is incorrect.")
class InvalidCredentialsError(Error):
    pass


@strawberry.type(
    description="The token (a refresh token, or an e-mail code) is invalid, expired, revoked "
    "or already used."
)
class InvalidTokenError(Error):
    pass


@strawberry.type(description="Your e-mail address is verified already.")
class EmailAlreadyVerifiedError(Error):
    pass


@strawberry.type(
    description="Your account received its hourly budget of these mails "
    "(MAIL_PER_ACCOUNT_PER_HOUR); retry after `retryAfterSeconds`."
)
class TooManyMailsError(Error):
    retry_after_seconds: int


@strawberry.type(description="You cannot follow yourself.")
class CannotFollowSelfError(Error):
    pass


@strawberry.type(description="You cannot block yourself.")
class CannotBlockSelfError(Error):
    pass


@strawberry.type(description="The account is banned or deleted.")
class UserUnavailableError(Error):
    pass


@strawberry.type(description="A block stands between you and this account.")
class BlockedError(Error):
    pass


@strawberry.type(description="Only the author can do this to the post.")
class NotPostAuthorError(Error):
    pass


@strawberry.type(description="Only the comment's author or the post's author can do this.")
class NotCommentModeratorError(Error):
    pass


@strawberry.type(
    description="The password given to confirm the change is not yours; `field` names it."
)
class WrongPasswordError(Error):
    field: str


@strawberry.type(
    description="The password is right, but you asked to delete this account: it is hidden "
    "and its data is purged at `deletionDueAt`. To keep it, call cancelAccountDeletion with "
    "the same username and password before then (it signs you in)."
)
class AccountPendingDeletionError(Error):
    deletion_due_at: dt.datetime


@strawberry.type(description="You may not do this (moderator actions: only moderators).")
class ForbiddenError(Error):
    pass


@strawberry.type(
    description="The post's edit window (POST_EDIT_WINDOW_S after its creation) closed at "
    "`editableUntil`."
)
class EditWindowClosedError(Error):
    editable_until: dt.datetime


@strawberry.type(description="You cannot mute yourself.")
class CannotMuteSelfError(Error):
    pass


@strawberry.enum(
    description="Why an upload cannot go into a post: USED (another post has it, or this "
    "one twice), EXPIRED (its upload window passed: reserve a new one and send it again), "
    "NOT_UPLOADED (no bytes arrived, or not as many as declared), FAILED (its bytes were "
    "refused)."
)
class UploadProblem(StrEnum):
    USED = "USED"
    EXPIRED = "EXPIRED"
    NOT_UPLOADED = "NOT_UPLOADED"
    FAILED = "FAILED"


@strawberry.type(
    description="An upload named in `uploadIds` cannot be used; `index` is its position "
    "in that list (0-based)."
)
class UploadUnusableError(Error):
    index: int
    reason: UploadProblem


@strawberry.type(
    description="You have no upload with that id (an upload is only its owner's); `index` "
    "is its position in `uploadIds` (0-based)."
)
class UploadNotFoundError(Error):
    index: int


@strawberry.type(
    description="External media URLs are accepted only over https from this server's "
    "allowed hosts (none by default): upload the file with createMediaUpload."
)
class MediaUrlNotAllowedError(Error):
    url: str


_MAP: list[tuple[type[d.DomainError], type[Error]]] = [
    (di.UsernameTakenError, UsernameTakenError),
    (di.EmailTakenError, EmailTakenError),
    (di.InvalidCredentialsError, InvalidCredentialsError),
    (di.InvalidTokenError, InvalidTokenError),
    (di.WrongPasswordError, WrongPasswordError),
    (di.AccountPendingDeletionError, AccountPendingDeletionError),
    (di.EmailAlreadyVerifiedError, EmailAlreadyVerifiedError),
    (di.TooManyMailsError, TooManyMailsError),
    (dm.NotModeratorError, ForbiddenError),
    (ds.SelfMuteError, CannotMuteSelfError),
    (ds.SelfFollowError, CannotFollowSelfError),
    (ds.SelfBlockError, CannotBlockSelfError),
    (ds.UserUnavailableError, UserUnavailableError),
    (ds.BlockedError, BlockedError),
    (dp.NotPostAuthorError, NotPostAuthorError),
    (dp.EditWindowClosedError, EditWindowClosedError),
    (de.NotCommentModeratorError, NotCommentModeratorError),
    (dmedia.UploadUnusableError, UploadUnusableError),
    (dmedia.UploadNotFoundError, UploadNotFoundError),
    (dmedia.MediaUrlNotAllowedError, MediaUrlNotAllowedError),
    (d.ValidationError, ValidationError),
    (d.NotFoundError, NotFoundError),
]


@overload
def error_from_domain(exc: di.UsernameTakenError) -> UsernameTakenError: ...


@overload
def error_from_domain(exc: di.EmailTakenError) -> EmailTakenError: ...


@overload
def error_from_domain(exc: di.InvalidCredentialsError) -> InvalidCredentialsError: ...


@overload
def error_from_domain(exc: di.InvalidTokenError) -> InvalidTokenError: ...


@overload
def error_from_domain(exc: di.WrongPasswordError) -> WrongPasswordError: ...


@overload
def error_from_domain(exc: di.AccountPendingDeletionError) -> AccountPendingDeletionError: ...


@overload
def error_from_domain(exc: di.EmailAlreadyVerifiedError) -> EmailAlreadyVerifiedError: ...


@overload
def error_from_domain(exc: di.TooManyMailsError) -> TooManyMailsError: ...


@overload
def error_from_domain(exc: dm.NotModeratorError) -> ForbiddenError: ...


@overload
def error_from_domain(exc: ds.SelfMuteError) -> CannotMuteSelfError: ...


@overload
def error_from_domain(exc: ds.SelfFollowError) -> CannotFollowSelfError: ...


@overload
def error_from_domain(exc: ds.SelfBlockError) -> CannotBlockSelfError: ...


@overload
def error_from_domain(exc: ds.UserUnavailableError) -> UserUnavailableError: ...


@overload
def error_from_domain(exc: ds.BlockedError) -> BlockedError: ...


@overload
def error_from_domain(exc: dp.NotPostAuthorError) -> NotPostAuthorError: ...


@overload
def error_from_domain(exc: dp.EditWindowClosedError) -> EditWindowClosedError: ...


@overload
def error_from_domain(exc: de.NotCommentModeratorError) -> NotCommentModeratorError: ...


@overload
def error_from_domain(exc: dmedia.UploadUnusableError) -> UploadUnusableError: ...


@overload
def error_from_domain(exc: dmedia.UploadNotFoundError) -> UploadNotFoundError: ...


@overload
def error_from_domain(exc: dmedia.MediaUrlNotAllowedError) -> MediaUrlNotAllowedError: ...


@overload
def error_from_domain(exc: d.ValidationError) -> ValidationError: ...


@overload
def error_from_domain(exc: d.NotFoundError) -> NotFoundError: ...


def error_from_domain(exc: d.DomainError) -> Error:
    """Return the GraphQL error object for a domain error (most specific class first).

    The overloads above are the same table as ``_MAP`` for the type checker: a resolver
    that catches ``A | B`` gets the union of their GraphQL types, which mypy holds
    against the mutation's declared result union (a caught error the union does not
    list, or one with no GraphQL type, fails ``make lint``).

    Raises the original exception if no GraphQL type mirrors it, so an unmapped error
    surfaces as a masked internal error instead of a wrong answer.
    """
    for domain_cls, gql_cls in _MAP:
        if isinstance(exc, domain_cls):
            kwargs: dict[str, Any] = {"message": exc.message, "code": ErrorCode(exc.code)}
            for name in vars(gql_cls).get("__annotations__", {}):  # its own: field, …
                kwargs[name] = getattr(exc, name)
            if gql_cls is UploadUnusableError:  # the enum member of the domain's code
                kwargs["reason"] = UploadProblem(str(kwargs["reason"]))
            return gql_cls(**kwargs)
    raise exc
