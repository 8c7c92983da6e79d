"""schema/errors.py: every typed domain error becomes the GraphQL union member that
mirrors it (same code and message, its own fields copied), the most specific class
first; an error without a member is raised again (masked), never answered wrongly."""

from __future__ import annotations

import datetime as dt
import typing
import uuid

import pytest

from domain import errors as d
from domain.engagement.errors import CommentNotFoundError
from domain.identity import errors as di
from domain.media import errors as dmedia
from domain.posts.errors import PostNotFoundError
from domain.social import errors as ds
from schema import errors as gql
from schema.errors import _MAP, error_from_domain


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


@pytest.mark.parametrize(("domain_cls", "gql_cls"), _MAP, ids=[c.__name__ for c, _ in _MAP])
def test_each_domain_error_becomes_its_member_with_code_message_and_fields(
    domain_cls, gql_cls
) -> None:
    exc = _instance(domain_cls)
    out = error_from_domain(exc)
    assert type(out) is gql_cls
    assert (out.code.value, out.message) == (exc.code, exc.message)
    for name in vars(gql_cls).get("__annotations__", {}):
        assert getattr(out, name) == getattr(exc, name)


def test_subclasses_map_before_their_bases() -> None:
    classes = [c for c, _ in _MAP]
    for i, cls in enumerate(classes):
        for later in classes[i + 1 :]:
            assert not issubclass(later, cls), f"{later.__name__} is shadowed by {cls.__name__}"


def test_specific_not_found_errors_answer_not_found_with_their_own_message() -> None:
    for exc in (PostNotFoundError(), CommentNotFoundError(), ds.FollowRequestNotFoundError()):
        out = error_from_domain(exc)
        assert type(out) is gql.NotFoundError and out.code.value == "NOT_FOUND"
        assert out.message == exc.message


def test_an_error_with_no_member_is_raised_again() -> None:
    exc = di.AccountUnavailableError()
    with pytest.raises(di.AccountUnavailableError):
        error_from_domain(exc)


def test_the_overloads_list_exactly_the_table() -> None:
    """The type checker's view (one overload per row, make lint) and the runtime table
    agree, row for row."""
    hints = [typing.get_type_hints(f) for f in typing.get_overloads(error_from_domain)]
    assert [(h["exc"], h["return"]) for h in hints] == list(_MAP)
