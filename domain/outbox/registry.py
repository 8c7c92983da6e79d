"""The one registry from event type to its consumers; each (event, consumer) pair runs as its own
job. Events without a consumer are an audit trail."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from domain.outbox import events as ev
from domain.outbox.events import Event

FEED = "feed"  # fan-out, merges and removals of timelines (domain.feed.consumers)
NOTIFICATIONS = "notifications"  # in-app records, pushes (domain.notifications.consumers)
REALTIME = "realtime"  # like/comment counts to subscribers (domain.realtime.consumers)
ACCOUNTS = "accounts"  # data export archives (domain.accounts.consumers)
RANKING = "ranking"  # ranking signals, trending posts (domain.feed.ranking_consumers)
MEDIA = "media"  # processing, publishing and deleting post media (domain.media.consumers)
MAIL = "mail"  # verification and password reset mails (domain.identity.mail_consumers)

#: The events whose real-time publish the API does itself right after the commit when
#: REALTIME_ENGAGEMENT=api (deleteComment does not know the post: the worker does it).
API_PUBLISHED: tuple[type[Event], ...] = (ev.LikeCreated, ev.LikeRemoved, ev.CommentCreated)


@dataclass(frozen=True)
class Registry:
    """Event type -> its consumers' names, in the order they were declared."""

    routes: Mapping[type[Event], tuple[str, ...]]

    def consumers(self, event_type: type[Event]) -> tuple[str, ...]:
        """The consumers of ``event_type`` (empty for an event nobody consumes)."""
        return self.routes.get(event_type, ())

    def consumers_of_topic(self, topic: str) -> tuple[str, ...]:
        """The consumers of the event of ``topic`` (empty for an unknown topic)."""
        event_type = self.type_of(topic)
        return () if event_type is None else self.consumers(event_type)

    def type_of(self, topic: str) -> type[Event] | None:
        """The event class of ``topic`` among this registry's (None if unknown)."""
        return self._by_topic.get(topic)

    def decode(self, topic: str, payload: Mapping[str, Any]) -> Event:
        """The event of a stored row; raises KeyError for a topic this registry lacks."""
        return self._by_topic[topic].from_payload(payload)

    def without(self, consumer: str, event_types: Iterable[type[Event]]) -> Registry:
        """This registry with ``consumer`` taken off ``event_types``."""
        drop = set(event_types)
        return Registry(
            {
                t: tuple(c for c in cs if not (c == consumer and t in drop))
                for t, cs in self.routes.items()
            }
        )

    @property
    def _by_topic(self) -> Mapping[str, type[Event]]:
        return {t.topic: t for t in self.routes}

    def names(self) -> set[str]:
        """Every consumer named by a route."""
        return {c for cs in self.routes.values() for c in cs}


#: Every event type Roost writes, with its consumers (docs/design.md "Decided in the second round").
REGISTRY = Registry(
    MappingProxyType(
        {
            ev.PostCreated: (FEED, NOTIFICATIONS),  # fan-out; caption mentions
            ev.AvatarUploaded: (MEDIA,),  # square variants, then the profile shows them
            ev.PostEdited: (NOTIFICATIONS, REALTIME),  # new mentions; subscribers re-read it
            ev.PostMediaUploaded: (MEDIA,),  # process, then publish (post.created) or fail
            ev.PostProcessed: (NOTIFICATIONS,),  # "your post is published" / "could not be"
            # Out of every cached feed; its media objects; out of the trending posts.
            ev.PostDeleted: (FEED, MEDIA, RANKING),
            ev.FollowCreated: (FEED, NOTIFICATIONS),  # merge the author; "followed you"
            ev.FollowRemoved: (FEED,),  # take the author's posts out
            ev.BlockCreated: (FEED,),  # both ways
            ev.FollowRequestCreated: (NOTIFICATIONS,),
            ev.FollowRequestApproved: (NOTIFICATIONS,),  # "your request was approved"
            ev.LikeCreated: (NOTIFICATIONS, REALTIME, RANKING),
            ev.LikeRemoved: (NOTIFICATIONS, REALTIME, RANKING),  # the liker leaves the group
            ev.CommentCreated: (NOTIFICATIONS, REALTIME, RANKING),  # comment, reply, mentions
            ev.CommentDeleted: (REALTIME, RANKING),
            ev.DataExportRequested: (ACCOUNTS,),  # prepare the archive
            ev.UserStatusChanged: (RANKING,),  # banned: its posts leave the trending ones
            ev.AccountDeletionRequested: (RANKING,),  # the same, as its owner leaves
            ev.EmailVerificationRequested: (MAIL,),  # the verification link
            ev.PasswordResetRequested: (MAIL,),  # look the account up; the reset link
            # An audit trail, consumed by nobody (yet):
            ev.UserCreated: (),
            ev.UserUpdated: (),
            ev.PasswordChanged: (),
            ev.EmailVerified: (),
            ev.AccountDeletionCancelled: (),
            ev.UserPurged: (),
            ev.FollowRequestCancelled: (),
            ev.FollowRequestRejected: (),
            ev.BlockRemoved: (),
            ev.MuteCreated: (),
            ev.MuteRemoved: (),
            ev.ReportFiled: (),
            ev.ReportResolved: (),
        }
    )
)


def registry_for(*, api_publishes_engagement: bool) -> Registry:
    """The deployment's registry; with REALTIME_ENGAGEMENT=api the ``realtime`` consumer drops what
    the API publishes."""
    if api_publishes_engagement:
        return REGISTRY.without(REALTIME, API_PUBLISHED)
    return REGISTRY
