"""The typed events and their registry (domain.outbox.events, domain.outbox.registry):
pure, no database."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import re
import typing
import uuid

import pytest

from app.container import check_routes
from domain.accounts.config import AccountsConfig
from domain.accounts.consumers import accounts_consumer
from domain.feed.consumers import feed_consumer
from domain.feed.ranking_consumers import ranking_consumer
from domain.identity.mail_consumers import mail_consumer
from domain.mail.config import MailConfig
from domain.media.consumers import media_consumer
from domain.notifications.consumers import notification_consumer
from domain.outbox import events as ev
from domain.outbox.dispatch import REDRIVE_AFTER_S
from domain.outbox.events import EVENT_TYPES, EventPayloadError, decode
from domain.outbox.jobs import job_id
from domain.outbox.registry import (
    ACCOUNTS,
    API_PUBLISHED,
    FEED,
    MAIL,
    MEDIA,
    NOTIFICATIONS,
    RANKING,
    REALTIME,
    REGISTRY,
    Registry,
    registry_for,
)
from domain.outbox.unit_of_work import Entry, UnitOfWork, outbox_insert_sql
from domain.realtime.consumers import realtime_consumer


def _sample(event_type: type[ev.Event]) -> ev.Event:
    """An event of ``event_type`` with a value of the right type in every field."""
    hints = typing.get_type_hints(event_type)
    values = {}
    for f in dataclasses.fields(event_type):
        hint = hints[f.name]
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        base = args[0] if args and typing.get_origin(hint) is not tuple else hint
        if base is uuid.UUID:
            values[f.name] = uuid.uuid4()
        elif base is dt.datetime:
            values[f.name] = dt.datetime(2026, 11, 30, 12, 0, 0, 123456, tzinfo=dt.UTC)
        elif base is int:
            values[f.name] = 3
        elif typing.get_origin(base) is tuple:
            values[f.name] = ("bio", "display_name")
        else:
            values[f.name] = "x"
    return event_type(**values)


def test_every_event_type_is_in_the_registry_once_by_topic():
    assert set(REGISTRY.routes) == set(EVENT_TYPES.values())
    assert len({t.topic for t in REGISTRY.routes}) == len(REGISTRY.routes)
    for topic, event_type in EVENT_TYPES.items():
        assert event_type.topic == topic
        assert REGISTRY.type_of(topic) is event_type


@pytest.mark.parametrize("event_type", sorted(EVENT_TYPES.values(), key=lambda t: t.topic))
def test_a_payload_decodes_back_to_the_same_event(event_type):
    event = _sample(event_type)
    stored = json.loads(json.dumps(event.payload()))  # what JSONB gives back
    assert decode(event_type.topic, stored) == event
    assert isinstance(event.aggregate_id, uuid.UUID)


def test_payloads_keep_their_wire_format():
    follower, followee = uuid.uuid4(), uuid.uuid4()
    assert ev.FollowCreated(follower, followee).payload() == {
        "follower_id": str(follower),
        "followee_id": str(followee),
    }
    due = dt.datetime(2026, 12, 30, tzinfo=dt.UTC)
    assert ev.AccountDeletionRequested(follower, due).payload()["deletion_due_at"] == (
        due.isoformat()
    )
    # a stored row with a key the class does not declare still decodes
    old = {"follower_id": str(follower), "followee_id": str(followee), "legacy": 1}
    assert decode("follow.created", old) == ev.FollowCreated(follower, followee)


def test_a_bad_payload_is_a_typed_error():
    with pytest.raises(EventPayloadError):
        decode("follow.created", {"follower_id": "not-a-uuid", "followee_id": str(uuid.uuid4())})
    with pytest.raises(EventPayloadError):
        decode("follow.created", {"follower_id": str(uuid.uuid4())})  # followee missing
    with pytest.raises(KeyError):
        decode("no.such.topic", {})


def test_what_happens_after_each_event_is_one_lookup():
    assert REGISTRY.consumers(ev.FollowCreated) == (FEED, NOTIFICATIONS)
    assert REGISTRY.consumers(ev.PostCreated) == (FEED, NOTIFICATIONS)
    assert REGISTRY.consumers(ev.FollowRemoved) == (FEED,)
    assert REGISTRY.consumers(ev.DataExportRequested) == (ACCOUNTS,)
    assert REGISTRY.consumers(ev.UserCreated) == ()
    assert REGISTRY.consumers_of_topic("like.created") == (NOTIFICATIONS, REALTIME, RANKING)
    assert REGISTRY.consumers_of_topic("no.such.topic") == ()


def test_the_api_publishing_engagement_drops_only_those_realtime_routes():
    api = registry_for(api_publishes_engagement=True)
    assert registry_for(api_publishes_engagement=False) is REGISTRY
    for event_type in REGISTRY.routes:
        expected = REGISTRY.consumers(event_type)
        if event_type in API_PUBLISHED:
            expected = tuple(c for c in expected if c != REALTIME)
        assert api.consumers(event_type) == expected
    assert api.consumers(ev.CommentDeleted) == (REALTIME, RANKING)  # the API cannot publish it
    assert all(api.consumers(t) for t in API_PUBLISHED)  # no event loses every consumer


def test_every_route_has_a_handler_in_the_production_consumers():
    # The factories only close over their dependencies: none is touched here.
    consumers = {
        FEED: feed_consumer(None, None, None),  # type: ignore[arg-type]
        NOTIFICATIONS: notification_consumer(None, None, None),  # type: ignore[arg-type]
        REALTIME: realtime_consumer(None),  # type: ignore[arg-type]
        ACCOUNTS: accounts_consumer(None, AccountsConfig()),  # type: ignore[arg-type]
        RANKING: ranking_consumer(None, None),  # type: ignore[arg-type]
        MEDIA: media_consumer(None, None, counter_shards=1, dispatcher=None),  # type: ignore[arg-type]
        MAIL: mail_consumer(None, None, MailConfig(), b"k"),  # type: ignore[arg-type]
    }
    check_routes(REGISTRY, consumers)
    check_routes(registry_for(api_publishes_engagement=True), consumers)
    wider = Registry({**REGISTRY.routes, ev.MuteCreated: (FEED,)})
    with pytest.raises(RuntimeError, match=re.escape("mute.created -> feed")):
        check_routes(wider, consumers)


def test_the_sql_helper_writes_the_class_topic_from_bound_values():
    sql = outbox_insert_sql(ev.LikeCreated, source="l", aggregate="l.post_id")
    assert "'like.created'" in sql and "FROM l" in sql and ":event_payload" in sql
    like = ev.LikeCreated(uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    entry = Entry(uuid.uuid4(), like, (NOTIFICATIONS,), "event")
    assert entry.params == {
        "event_delay": REDRIVE_AFTER_S,
        "event_id": entry.id,
        "event_payload": json.dumps(like.payload()),
    }
    assert Entry(entry.id, like, (), "k").params["k_delay"] == 0
    bulk = outbox_insert_sql(
        ev.FollowCreated, source="w", aggregate="w.f", event_id="w.e", payload="w.p", delay="w.d"
    )
    assert ":" not in bulk  # every value an expression of the source


class _CountingRegistry:
    """REGISTRY, counting how often it is asked for consumers."""

    def __init__(self) -> None:
        self.lookups = 0

    def consumers(self, event_type: type[ev.Event]) -> tuple[str, ...]:
        self.lookups += 1
        return REGISTRY.consumers(event_type)


class _Dispatcher:
    def __init__(self) -> None:
        self.registry = _CountingRegistry()
        self.sent: list[tuple[uuid.UUID, tuple[str, ...]]] = []

    async def enqueue(self, event_id: uuid.UUID, consumers: typing.Sequence[str]) -> None:
        self.sent.append((event_id, tuple(consumers)))


async def test_the_unit_of_work_enqueues_what_was_written_with_consumers_resolved_once():
    dispatcher = _Dispatcher()
    uow = UnitOfWork(None, dispatcher)  # type: ignore[arg-type]  (no statement runs)
    follow = await uow.record(ev.FollowCreated(uuid.uuid4(), uuid.uuid4()), key="event")
    request = await uow.record(ev.FollowRequestCreated(uuid.uuid4(), uuid.uuid4()), key="r")
    audit = await uow.record(ev.MuteCreated(uuid.uuid4(), uuid.uuid4()), key="m")
    assert follow.params["event_delay"] == REDRIVE_AFTER_S  # the relay holds off
    assert audit.params["m_delay"] == 0  # nobody consumes it: nothing to hold off
    uow.written(follow, audit)  # the request's statement wrote nothing
    await uow.dispatch()
    assert dispatcher.sent == [(follow.id, (FEED, NOTIFICATIONS))]
    assert request.id not in {i for i, _ in dispatcher.sent}
    assert dispatcher.registry.lookups == 3  # one per recorded event, none after commit

    alone = UnitOfWork(None, None)  # type: ignore[arg-type]
    entry = await alone.record(ev.FollowCreated(uuid.uuid4(), uuid.uuid4()), key="event")
    assert entry.consumers == () and entry.params["event_delay"] == 0  # the relay's at once


def test_job_ids_name_the_event_and_the_consumer():
    event_id = uuid.uuid4()
    assert job_id(event_id, FEED) == f"outbox:{event_id}:feed"
    assert job_id(event_id, FEED) != job_id(event_id, NOTIFICATIONS)
