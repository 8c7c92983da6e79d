"""schema/errors.py: every typed domain error becomes the GraphQL union member declared
for it (same code and message, its own fields copied), the nearest declared class of the
error winning; a mutation answers exactly the errors its result union lists, and any
other exception, an undeclared domain error included, stays an internal error."""

from __future__ import annotations

import datetime as dt
import typing
import uuid
from typing import Annotated

import pytest
import strawberry

from domain import errors as d
from domain.engagement.errors import CommentNotFoundError
from domain.identity import errors as di
from domain.media import errors as dmedia
from domain.posts.errors import PostNotFoundError
from domain.social import errors as ds
from resolvers.mutation import Mutation
from schema import errors as gql
from schema.errors import _TYPES, declared_errors, error_from_domain, typed_errors


def _instance(cls: type[d.DomainError]) -> d.DomainError:
    if cls is dmedia.UploadUnusableError:
        return cls(uuid.uuid4(), "EXPIRED", "Expired.", index=3)
    if cls is dmedia.UploadNotFoundError:
        return cls(uuid.uuid4(), index=1)
    if cls is dmedia.MediaUrlNotAllowedError:
        return cls("http://169.254.169.254/latest/meta-data/x.jpg")
    if issubclass(cls, d.ValidationError):
        return cls("caption", "Too long.")
    if cls is di.AccountPendingDeletionError:
        return cls(dt.datetime(2026, 12, 30, tzinfo=dt.UTC))
    if cls is di.WrongPasswordError:
        return cls("currentPassword")
    try:
        return cls()  # type: ignore[call-arg]
    except TypeError:
        return cls("Refused.")


@pytest.mark.parametrize(
    ("domain_cls", "gql_cls"), _TYPES.items(), ids=[c.__name__ for c in _TYPES]
)
def test_each_domain_error_becomes_its_member_with_code_message_and_fields(
    domain_cls, gql_cls
) -> None:
    exc = _instance(domain_cls)
    out = error_from_domain(exc)
    assert type(out) is gql_cls
    assert (out.code.value, out.message) == (exc.code, exc.message)
    for name in vars(gql_cls).get("__annotations__", {}):
        assert getattr(out, name) == getattr(exc, name)


def test_an_enum_field_gets_the_enum_member_of_the_domain_value() -> None:
    out = error_from_domain(_instance(dmedia.UploadUnusableError))
    assert isinstance(out, gql.UploadUnusableError)
    assert out.reason is gql.UploadProblem.EXPIRED and out.index == 3


def test_specific_not_found_errors_answer_not_found_with_their_own_message() -> None:
    for exc in (PostNotFoundError(), CommentNotFoundError(), ds.FollowRequestNotFoundError()):
        out = error_from_domain(exc)
        assert type(out) is gql.NotFoundError and out.code.value == "NOT_FOUND"
        assert out.message == exc.message


def test_an_error_with_no_member_is_raised_again() -> None:
    exc = di.AccountUnavailableError()
    with pytest.raises(di.AccountUnavailableError):
        error_from_domain(exc)


def _union_errors(annotation: object) -> set[type]:
    members = typing.get_args(typing.get_args(annotation)[0])
    return {m for m in members if isinstance(m, type) and issubclass(m, gql.Error)}


def test_every_mutation_answers_exactly_the_errors_of_its_union() -> None:
    """A mutation whose union lists a typed error raises it from its resolver: the
    resolver must be wrapped, with that union's errors, or the error would be masked."""
    checked = 0
    for field in Mutation.__strawberry_definition__.fields:
        resolver = field.base_resolver
        assert resolver is not None
        annotation = typing.get_type_hints(resolver.wrapped_func, include_extras=True)["return"]
        listed = _union_errors(annotation) if typing.get_args(annotation) else set()
        assert declared_errors(resolver.wrapped_func) == listed, field.python_name
        checked += bool(listed)
    assert checked >= 30


def test_a_union_member_no_domain_error_answers_fails_at_import() -> None:
    @strawberry.type
    class Unanswered(gql.Error):
        pass

    async def resolver():
        return Ok(done=True)

    resolver.__annotations__["return"] = Annotated[Ok | Unanswered, strawberry.union("R")]
    with pytest.raises(TypeError, match="Unanswered"):
        typed_errors(resolver)


# --- a mutation, executed -----------------------------------------------------------------


@strawberry.type
class Ok:
    done: bool


TryResult = Annotated[Ok | gql.NotFoundError | gql.BlockedError, strawberry.union("TryResult")]
RAISED: list[Exception] = []


@strawberry.type
class _Query:
    ok: bool = True


@strawberry.type
class _Mutation:
    @strawberry.mutation
    @typed_errors
    async def attempt(self) -> TryResult:
        if RAISED:
            raise RAISED[0]
        return Ok(done=True)


SCHEMA = strawberry.Schema(query=_Query, mutation=_Mutation)
ATTEMPT = """mutation { attempt { __typename
  ... on Ok { done } ... on Error { code message } ... on BlockedError { code } } }"""


async def _attempt(exc: Exception | None):
    RAISED[:] = [exc] if exc is not None else []
    return await SCHEMA.execute(ATTEMPT)


async def test_a_declared_domain_error_is_answered_as_its_typed_payload() -> None:
    out = await _attempt(PostNotFoundError())
    assert out.errors is None
    assert out.data == {
        "attempt": {
            "__typename": "NotFoundError",
            "code": "NOT_FOUND",
            "message": "No post has that id.",
        }
    }
    out = await _attempt(ds.BlockedError())
    assert out.errors is None and out.data is not None
    assert out.data["attempt"]["__typename"] == "BlockedError"
    assert (await _attempt(None)).data == {"attempt": {"__typename": "Ok", "done": True}}


@pytest.mark.parametrize(
    "exc",
    [ds.SelfFollowError(), di.AccountUnavailableError(), RuntimeError("boom")],
    ids=["another-mutations-error", "an-error-with-no-type", "not-a-domain-error"],
)
async def test_an_undeclared_error_stays_an_internal_error(exc: Exception) -> None:
    """SelfFollowError has a type (CannotFollowSelfError), but not in this union: the
    field fails with the original exception (masked by Roost's schema), no payload."""
    out = await _attempt(exc)
    assert out.data is None
    assert out.errors is not None and len(out.errors) == 1
    assert out.errors[0].original_error is exc
