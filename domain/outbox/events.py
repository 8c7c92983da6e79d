"""Roost's domain events: one frozen dataclass per outbox topic, with its ``topic``, ``aggregate``
key field and payload encoding. Consumers: :mod:`domain.outbox.registry`."""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import typing
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Self

#: Event classes by topic (one declared elsewhere is known only to its Registry).
EVENT_TYPES: dict[str, type[Event]] = {}


class EventPayloadError(ValueError):
    """A stored payload does not decode to its topic's event (a missing or bad field)."""


@dataclass(frozen=True)
class Event:
    """Base of the event classes: ``topic`` names the event, ``aggregate`` the field keying its
    outbox row; subclasses are frozen dataclasses of the payload."""

    topic: ClassVar[str]
    aggregate: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        topic = cls.__dict__.get("topic")
        if topic is not None and cls.__module__ == __name__:
            if topic in EVENT_TYPES:
                raise TypeError(f"two event classes for topic {topic!r}")
            EVENT_TYPES[topic] = cls

    @property
    def aggregate_id(self) -> uuid.UUID:
        """The id the outbox row is keyed by (``aggregate_id``): the ``aggregate`` field."""
        value = getattr(self, self.aggregate)
        assert isinstance(value, uuid.UUID)
        return value

    def payload(self) -> dict[str, Any]:
        """The JSON payload by field name (UUIDs, datetimes as strings; None defaults left out)."""
        payload = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None and f.default is None:
                continue
            payload[f.name] = _encode(value)
        return payload

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> Self:
        """Decode a stored payload (unknown keys ignored); raises EventPayloadError when a required
        field is missing or malformed."""
        hints = _hints(cls)  # type: ignore[arg-type]  # a class is hashable; Self hides it
        values: dict[str, Any] = {}
        try:
            for f in dataclasses.fields(cls):
                if f.name in payload:
                    values[f.name] = _decode(hints[f.name], payload[f.name])
            return cls(**values)
        except (TypeError, ValueError, AttributeError) as exc:
            raise EventPayloadError(f"{cls.topic}: {exc}") from None


def decode(topic: str, payload: Mapping[str, Any]) -> Event:
    """The event of a stored outbox row; raises KeyError for a topic no class declares."""
    return EVENT_TYPES[topic].from_payload(payload)


@functools.cache
def _hints(cls: type[Event]) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _encode(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, tuple):
        return [_encode(v) for v in value]
    return value


def _decode(hint: Any, value: Any) -> Any:
    if value is None:
        return None
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = args[0] if typing.get_origin(hint) in (typing.Union, _UnionType) else hint
    if base is uuid.UUID:
        return uuid.UUID(value)
    if base is dt.datetime:
        return dt.datetime.fromisoformat(value)
    if typing.get_origin(base) is tuple:
        return tuple(value)
    return value


_UnionType = type(int | None)


@dataclass(frozen=True)
class UserCreated(Event):
    """Someone signed up (domain.identity.sign_up)."""

    topic = "user.created"
    aggregate = "user_id"
    user_id: uuid.UUID


@dataclass(frozen=True)
class UserUpdated(Event):
    """A profile changed (domain.identity.update_profile); ``fields``: the names changed."""

    topic = "user.updated"
    aggregate = "user_id"
    user_id: uuid.UUID
    fields: tuple[str, ...]


@dataclass(frozen=True)
class PasswordChanged(Event):
    """A password changed and ``ended_sessions`` other sessions ended."""

    topic = "user.password_changed"
    aggregate = "user_id"
    user_id: uuid.UUID
    ended_sessions: int


@dataclass(frozen=True)
class EmailVerificationRequested(Event):
    """``email`` of ``user_id`` is to be verified; the ``mail`` consumer sends the link."""

    topic = "user.email_verification_requested"
    aggregate = "user_id"
    user_id: uuid.UUID
    email: str


@dataclass(frozen=True)
class EmailVerified(Event):
    """The owner of ``user_id`` proved ``email`` theirs (verifyEmail)."""

    topic = "user.email_verified"
    aggregate = "user_id"
    user_id: uuid.UUID
    email: str


@dataclass(frozen=True)
class PasswordResetRequested(Event):
    """A reset was asked for this ``email`` or ``username`` (as typed, maybe nobody's); keyed by
    ``request_id`` so it reveals no account."""

    topic = "user.password_reset_requested"
    aggregate = "request_id"
    request_id: uuid.UUID
    email: str | None = None
    username: str | None = None


@dataclass(frozen=True)
class UserStatusChanged(Event):
    """An operator or moderator changed an account's status (domain.moderation)."""

    topic = "user.status_changed"
    aggregate = "user_id"
    user_id: uuid.UUID
    status: str
    previous: str


@dataclass(frozen=True)
class AccountDeletionRequested(Event):
    """An account asked to be deleted; the purge may run from ``deletion_due_at``."""

    topic = "account.deletion_requested"
    aggregate = "user_id"
    user_id: uuid.UUID
    deletion_due_at: dt.datetime


@dataclass(frozen=True)
class AccountDeletionCancelled(Event):
    """An account pending deletion signed in again within the grace period."""

    topic = "account.deletion_cancelled"
    aggregate = "user_id"
    user_id: uuid.UUID


@dataclass(frozen=True)
class UserPurged(Event):
    """A deleted account's personal data was purged (``previous``: its status before)."""

    topic = "user.purged"
    aggregate = "user_id"
    user_id: uuid.UUID
    previous: str


@dataclass(frozen=True)
class DataExportRequested(Event):
    """Someone asked for an archive of their data; the worker prepares it."""

    topic = "data_export.requested"
    aggregate = "export_id"
    export_id: uuid.UUID
    user_id: uuid.UUID


@dataclass(frozen=True)
class FollowCreated(Event):
    """A live follow began (follow, approval, switch to public); keyed by the follow's id."""

    topic = "follow.created"
    aggregate = "followee_id"
    follower_id: uuid.UUID
    followee_id: uuid.UUID


@dataclass(frozen=True)
class FollowRemoved(Event):
    """A live follow ended (unfollow, or ``reason="block"``); keyed by the follow's id."""

    topic = "follow.removed"
    aggregate = "followee_id"
    follower_id: uuid.UUID
    followee_id: uuid.UUID
    reason: str | None = None


@dataclass(frozen=True)
class FollowRequestCreated(Event):
    """Someone asked to follow a private account; keyed by the request's id."""

    topic = "follow_request.created"
    aggregate = "target_id"
    requester_id: uuid.UUID
    target_id: uuid.UUID


@dataclass(frozen=True)
class FollowRequestCancelled(Event):
    """A pending request was withdrawn (by its requester, or ``reason="block"``)."""

    topic = "follow_request.cancelled"
    aggregate = "target_id"
    requester_id: uuid.UUID
    target_id: uuid.UUID
    reason: str | None = None


@dataclass(frozen=True)
class FollowRequestRejected(Event):
    """The private account's owner rejected a pending request."""

    topic = "follow_request.rejected"
    aggregate = "target_id"
    requester_id: uuid.UUID
    target_id: uuid.UUID


@dataclass(frozen=True)
class FollowRequestApproved(Event):
    """``target_id`` approved ``requester_id``'s request; keyed by the ``follows`` row's id."""

    topic = "follow_request.approved"
    aggregate = "target_id"
    requester_id: uuid.UUID
    target_id: uuid.UUID


@dataclass(frozen=True)
class BlockCreated(Event):
    """``blocker_id`` blocked ``blocked_id`` (follows both ways ended)."""

    topic = "block.created"
    aggregate = "blocker_id"
    blocker_id: uuid.UUID
    blocked_id: uuid.UUID


@dataclass(frozen=True)
class BlockRemoved(Event):
    """A block was lifted."""

    topic = "block.removed"
    aggregate = "blocker_id"
    blocker_id: uuid.UUID
    blocked_id: uuid.UUID


@dataclass(frozen=True)
class MuteCreated(Event):
    """``muter_id`` muted ``muted_id``."""

    topic = "mute.created"
    aggregate = "muter_id"
    muter_id: uuid.UUID
    muted_id: uuid.UUID


@dataclass(frozen=True)
class MuteRemoved(Event):
    """A mute was lifted."""

    topic = "mute.removed"
    aggregate = "muter_id"
    muter_id: uuid.UUID
    muted_id: uuid.UUID


@dataclass(frozen=True)
class PostCreated(Event):
    """A post was published: fanned out to feeds, its caption's mentions notified."""

    topic = "post.created"
    aggregate = "post_id"
    post_id: uuid.UUID
    author_id: uuid.UUID


@dataclass(frozen=True)
class AvatarUploaded(Event):
    """``user_id`` chose upload ``upload_id`` as avatar; the media worker makes its variants."""

    topic = "avatar.uploaded"
    aggregate = "user_id"
    user_id: uuid.UUID
    upload_id: uuid.UUID


@dataclass(frozen=True)
class PostEdited(Event):
    """The author edited ``post_id``'s caption (new mentions notified, subscribers told)."""

    topic = "post.edited"
    aggregate = "post_id"
    post_id: uuid.UUID
    author_id: uuid.UUID


@dataclass(frozen=True)
class PostMediaUploaded(Event):
    """A post with uploads was created PROCESSING; the media worker publishes or fails it."""

    topic = "post.media_uploaded"
    aggregate = "post_id"
    post_id: uuid.UUID
    author_id: uuid.UUID


@dataclass(frozen=True)
class PostProcessed(Event):
    """The media worker finished a post: ``state`` ``published`` or ``failed`` (``reason``)."""

    topic = "post.processed"
    aggregate = "post_id"
    post_id: uuid.UUID
    author_id: uuid.UUID
    state: str
    reason: str | None = None


@dataclass(frozen=True)
class PostDeleted(Event):
    """A post was deleted ``by`` its ``author`` or a ``moderator``."""

    topic = "post.deleted"
    aggregate = "post_id"
    post_id: uuid.UUID
    author_id: uuid.UUID
    by: str = "author"


@dataclass(frozen=True)
class LikeCreated(Event):
    """``user_id`` liked ``post_id`` (written by ``author_id``)."""

    topic = "like.created"
    aggregate = "post_id"
    post_id: uuid.UUID
    user_id: uuid.UUID
    author_id: uuid.UUID


@dataclass(frozen=True)
class LikeRemoved(Event):
    """``user_id`` unliked ``post_id``."""

    topic = "like.removed"
    aggregate = "post_id"
    post_id: uuid.UUID
    user_id: uuid.UUID
    author_id: uuid.UUID


@dataclass(frozen=True)
class CommentCreated(Event):
    """A comment (or a reply, with ``parent_id``) was added to a post."""

    topic = "comment.created"
    aggregate = "comment_id"
    comment_id: uuid.UUID
    post_id: uuid.UUID
    author_id: uuid.UUID
    post_author_id: uuid.UUID
    parent_id: uuid.UUID | None
    parent_author_id: uuid.UUID | None
    body: str


@dataclass(frozen=True)
class CommentDeleted(Event):
    """A comment and its replies (``deleted`` rows in all) were deleted."""

    topic = "comment.deleted"
    aggregate = "comment_id"
    comment_id: uuid.UUID
    post_id: uuid.UUID
    deleted: int


@dataclass(frozen=True)
class ReportFiled(Event):
    """A report of a ``user`` or a ``post`` was filed."""

    topic = "report.filed"
    aggregate = "report_id"
    report_id: uuid.UUID
    subject: str


@dataclass(frozen=True)
class ReportResolved(Event):
    """A moderator resolved a report (``status``: its new status)."""

    topic = "report.resolved"
    aggregate = "report_id"
    report_id: uuid.UUID
    status: str
