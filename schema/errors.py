"""The ``Error`` interface, the typed error members of result unions, and the one table
from domain errors to them.

Mutations return ``<Name>Success | <SomeError> | …`` (docs/design.md "GraphQL API
conventions"). Each error type is declared once, with the domain error class it answers
(:func:`answers`): that gives its ``ErrorCode`` value and how :func:`error_from_domain`
builds it. A resolver decorated with :func:`typed_errors` raises domain errors; those whose
types its result union lists are answered as those members, and every other exception
propagates (masked as an internal error).
"""

from __future__ import annotations

import datetime as dt
import functools
import typing
from collections.abc import Awaitable, Callable
from enum import Enum, StrEnum
from typing import TYPE_CHECKING, Annotated, Any, ParamSpec, TypeVar, cast

import strawberry

from domain import errors as d
from domain.engagement import errors as de
from domain.identity import errors as di
from domain.media import errors as dmedia
from domain.moderation import errors as dm
from domain.posts import errors as dp
from domain.social import errors as ds

_ErrorT = TypeVar("_ErrorT", bound="type[Error]")
_P = ParamSpec("_P")
_R = TypeVar("_R")

#: Each domain error class with the GraphQL type that answers it (and its subclasses), in
#: the order of declaration, which is the order of ``ErrorCode``'s values.
_TYPES: dict[type[d.DomainError], type[Error]] = {}
#: Each ``ErrorCode`` value with its description.
_CODES: dict[str, str] = {}
#: Each resolver :func:`typed_errors` wrapped, with the error types it answers.
_DECLARED: dict[Callable[..., object], frozenset[type[Error]]] = {}


def answers(domain_cls: type[d.DomainError], meaning: str) -> Callable[[_ErrorT], _ErrorT]:
    """Declare the decorated error type as the answer to ``domain_cls`` and its subclasses;
    its ``ErrorCode`` value is ``domain_cls.code``, described as ``meaning (Type).``."""

    def declare(gql_cls: _ErrorT) -> _ErrorT:
        if domain_cls in _TYPES or gql_cls in _TYPES.values() or domain_cls.code in _CODES:
            raise TypeError(f"{gql_cls.__name__}: {domain_cls.__name__} is answered already")
        _TYPES[domain_cls] = gql_cls
        _CODES[domain_cls.code] = f"{meaning} ({gql_cls.__name__})."
        return gql_cls

    return declare


@strawberry.interface(description="A typed, expected failure of a mutation. Nothing was changed.")
class Error:
    message: str = strawberry.field(description="What went wrong, for a person to read.")
    code: ErrorCode = strawberry.field(
        description="A stable machine-readable code, e.g. NOT_FOUND (the same strings as "
        "before it was an enum)."
    )


@answers(d.ValidationError, "An input value breaks a rule")
@strawberry.type(description="An input value breaks a rule; `field` names the input field.")
class ValidationError(Error):
    field: str


@answers(d.NotFoundError, "No such object, or not visible to you")
@strawberry.type(description="No object with that id exists, or it is not visible to you.")
class NotFoundError(Error):
    pass


@answers(di.UsernameTakenError, "The username is taken")
@strawberry.type(description="The username is taken (usernames compare case-insensitively).")
class UsernameTakenError(Error):
    field: str


@answers(di.EmailTakenError, "The e-mail address is registered")
@strawberry.type(description="The e-mail address is already registered.")
class EmailTakenError(Error):
    field: str


@answers(di.InvalidCredentialsError, "Username or password is incorrect")
@strawberry.type(description="Username or password is incorrect.")
class InvalidCredentialsError(Error):
    pass


@answers(di.InvalidTokenError, "A refresh token or e-mail code is invalid or used")
@strawberry.type(
    description="The token (a refresh token, or an e-mail code) is invalid, expired, revoked "
    "or already used."
)
class InvalidTokenError(Error):
    pass


@answers(di.WrongPasswordError, "The confirming password is wrong")
@strawberry.type(
    description="The password given to confirm the change is not yours; `field` names it."
)
class WrongPasswordError(Error):
    field: str


@answers(di.AccountPendingDeletionError, "The account is being deleted")
@strawberry.type(
    description="The password is right, but you asked to delete this account: it is hidden "
    "and its data is purged at `deletionDueAt`. To keep it, call cancelAccountDeletion with "
    "the same username and password before then (it signs you in)."
)
class AccountPendingDeletionError(Error):
    deletion_due_at: dt.datetime


@answers(di.EmailAlreadyVerifiedError, "The e-mail address is verified already")
@strawberry.type(description="Your e-mail address is verified already.")
class EmailAlreadyVerifiedError(Error):
    pass


@answers(di.TooManyMailsError, "Too many of these for now")
@strawberry.type(
    description="Your account received its hourly budget of these mails "
    "(MAIL_PER_ACCOUNT_PER_HOUR); retry after `retryAfterSeconds`."
)
class TooManyMailsError(Error):
    retry_after_seconds: int


@answers(dm.NotModeratorError, "You may not do this")
@strawberry.type(description="You may not do this (moderator actions: only moderators).")
class ForbiddenError(Error):
    pass


@answers(ds.SelfFollowError, "You cannot follow yourself")
@strawberry.type(description="You cannot follow yourself.")
class CannotFollowSelfError(Error):
    pass


@answers(ds.SelfBlockError, "You cannot block yourself")
@strawberry.type(description="You cannot block yourself.")
class CannotBlockSelfError(Error):
    pass


@answers(ds.SelfMuteError, "You cannot mute yourself")
@strawberry.type(description="You cannot mute yourself.")
class CannotMuteSelfError(Error):
    pass


@answers(ds.UserUnavailableError, "The account is banned or deleted")
@strawberry.type(description="The account is banned or deleted.")
class UserUnavailableError(Error):
    pass


@answers(ds.BlockedError, "A block stands between you and the account")
@strawberry.type(description="A block stands between you and this account.")
class BlockedError(Error):
    pass


@answers(dp.NotPostAuthorError, "Only the post's author can do this")
@strawberry.type(description="Only the author can do this to the post.")
class NotPostAuthorError(Error):
    pass


@answers(de.NotCommentModeratorError, "Only the comment's or the post's author can")
@strawberry.type(description="Only the comment's author or the post's author can do this.")
class NotCommentModeratorError(Error):
    pass


@answers(dp.EditWindowClosedError, "The post can no longer be edited")
@strawberry.type(
    description="The post's edit window (POST_EDIT_WINDOW_S after its creation) closed at "
    "`editableUntil`."
)
class EditWindowClosedError(Error):
    editable_until: dt.datetime


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


@answers(dmedia.UploadUnusableError, "An upload cannot go into a post")
@strawberry.type(
    description="An upload named in `uploadIds` cannot be used; `index` is its position "
    "in that list (0-based)."
)
class UploadUnusableError(Error):
    index: int
    reason: UploadProblem


@answers(dmedia.UploadNotFoundError, "You have no upload with that id")
@strawberry.type(
    description="You have no upload with that id (an upload is only its owner's); `index` "
    "is its position in `uploadIds` (0-based)."
)
class UploadNotFoundError(Error):
    index: int


@answers(dmedia.MediaUrlNotAllowedError, "An external media URL not allowed here")
@strawberry.type(
    description="External media URLs are accepted only over https from this server's "
    "allowed hosts (none by default): upload the file with createMediaUpload."
)
class MediaUrlNotAllowedError(Error):
    url: str


def _error_codes() -> type[Enum]:
    members = {code: strawberry.enum_value(code, description=text) for code, text in _CODES.items()}
    codes = cast("type[Enum]", Enum("ErrorCode", members, module=__name__))
    return strawberry.enum(
        codes,
        description="The machine-readable code of a typed error (`Error.code`); each error "
        "type has one (NotFoundError: NOT_FOUND, …). New codes may be added: treat one you "
        "do not know as a failure with its `message`.",
    )


if TYPE_CHECKING:

    class ErrorCode(Enum):
        """One value per error type declared above, each its domain class's ``code``."""

else:
    ErrorCode = _error_codes()


def _own_fields(gql_cls: type[Error]) -> dict[str, Any]:
    """The fields ``gql_cls`` adds to ``Error``, each with its type."""
    hints = typing.get_type_hints(gql_cls)
    return {name: hints[name] for name in vars(gql_cls).get("__annotations__", {})}


def error_from_domain(exc: d.DomainError) -> Error:
    """The typed error that answers ``exc``: the type declared for the nearest of its
    classes, with that class's code, ``exc``'s message and the type's own fields read from
    ``exc`` (an enum field from its value).

    Raises ``exc`` again if no type answers it, so an unmapped error surfaces as a masked
    internal error instead of a wrong answer.
    """
    for domain_cls in type(exc).__mro__:
        gql_cls = _TYPES.get(domain_cls)
        if gql_cls is None or not issubclass(domain_cls, d.DomainError):
            continue
        kwargs: dict[str, Any] = {"message": exc.message, "code": ErrorCode(domain_cls.code)}
        for name, hint in _own_fields(gql_cls).items():
            value = getattr(exc, name)
            is_enum = isinstance(hint, type) and issubclass(hint, Enum)
            kwargs[name] = hint(value) if is_enum else value
        return gql_cls(**kwargs)
    raise exc


def _union_errors(resolver: Callable[..., object]) -> frozenset[type[Error]]:
    """The error types among the members of ``resolver``'s declared result union."""
    result = typing.get_type_hints(resolver, include_extras=True).get("return")
    if typing.get_origin(result) is Annotated:
        result = typing.get_args(result)[0]
    members = typing.get_args(result) or (result,)
    errors = frozenset(m for m in members if isinstance(m, type) and issubclass(m, Error))
    if not errors:
        raise TypeError(f"{resolver.__qualname__}: its result lists no error type")
    if unanswered := errors - set(_TYPES.values()):
        names = sorted(t.__name__ for t in unanswered)
        raise TypeError(f"{resolver.__qualname__}: no domain error is answered by {names}")
    return errors


def typed_errors(resolver: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """Answer each domain error ``resolver`` raises whose type its result union lists with
    that member (:func:`error_from_domain`); any other exception propagates, an undeclared
    domain error included, and is masked as an internal error.

    The union is the one list of what the mutation may answer: the types are read from
    the return annotation here, so a member no domain error maps to fails at import.
    """
    declared = _union_errors(resolver)

    @functools.wraps(resolver)
    async def answering(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await resolver(*args, **kwargs)
        except d.DomainError as exc:
            answer = error_from_domain(exc)
            if type(answer) not in declared:
                raise
            return cast(_R, answer)  # a member of the union _R

    _DECLARED[answering] = declared
    return answering


def declared_errors(resolver: Callable[..., object]) -> frozenset[type[Error]]:
    """The error types a :func:`typed_errors` resolver answers (none for any other)."""
    return _DECLARED.get(resolver, frozenset())
