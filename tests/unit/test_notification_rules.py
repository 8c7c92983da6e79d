"""Pure rules of notifications: @mention parsing, push texts, event times, composing
outbox handlers, best-effort delivery."""

from __future__ import annotations

import datetime as dt
import logging
import uuid

import pytest

from domain.db import new_id
from domain.notifications.delivery import Delivery
from domain.notifications.mentions import extract_mentions
from domain.notifications.push import LoggingPushSender, PushMessage, push_text
from domain.notifications.queries import NotificationRecord
from domain.notifications.store import Changes, EventRef, event_time


def names(text: str, limit: int = 20) -> list[str]:
    return [c[-1] for c in extract_mentions(text, limit=limit)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("hi @alice", ["alice"]),
        ("@Alice and @BOB_1.x", ["alice", "bob_1.x"]),
        ("(@alice), @bob! @carol?", ["alice", "bob", "carol"]),
        ("thanks @alice.", ["alice"]),  # the trailing dot is punctuation
        ("@alice @alice @ALICE", ["alice"]),  # distinct
        ("mail bob@example.com or @bob@example.com", []),  # e-mail addresses
        ("see https://x.com/@alice and www.y.com/@bob", []),  # inside URLs
        ("a@b c@dd", []),  # after a word character
        ("café@alice", []),  # after a letter of any script
        ("@ab @" + "a" * 31, []),  # 2 and 31 characters are not usernames
        ("@" + "a" * 30, ["a" * 30]),
        ("@@alice /@bob", []),
        ("line one\n@alice", ["alice"]),
        ("@émile @ali-ce", ["ali"]),  # é is not a username character; '-' ends the name
    ],
)
def test_mentions(text, expected):
    assert names(text) == expected


def test_mentions_offer_the_dotted_name_first_and_stop_at_the_limit():
    assert extract_mentions("hey @alice.") == [("alice.", "alice")]
    text = " ".join(f"@user{i:02d}" for i in range(30))
    assert names(text, limit=20) == [f"user{i:02d}" for i in range(20)]


@pytest.mark.parametrize(
    ("kind", "actor", "count", "excerpt", "expected"),
    [
        ("follow", "alice", 1, None, "alice started following you."),
        ("follow_digest", None, 12, None, "12 people followed you."),
        ("follow_digest", None, 1, None, "1 person followed you."),
        ("follow_request", "bob", 1, None, "bob requested to follow you."),
        ("like", "bob", 1, None, "bob liked your post."),
        ("like", "bob", 2, None, "bob and 1 other liked your post."),
        ("like", "bob", 4, None, "bob and 3 others liked your post."),
        ("comment", "eve", 1, "nice!", 'eve commented on your post: "nice!"'),
        ("reply", None, 1, "x" * 100, 'Someone replied to your comment: "' + "x" * 79 + '…"'),
        ("mention", "eve", 1, None, "eve mentioned you"),
    ],
)
def test_push_texts(kind, actor, count, excerpt, expected):
    assert push_text(kind, actor, count, excerpt) == expected


def test_event_time_reads_the_uuid7_timestamp():
    before = dt.datetime.now(dt.UTC) - dt.timedelta(milliseconds=2)
    event_id = new_id()
    at = event_time(event_id)
    assert before <= at <= dt.datetime.now(dt.UTC) + dt.timedelta(milliseconds=2)
    assert event_time(event_id) == at  # the same on every run of the job
    ref = EventRef.of(event_id)
    assert ref == EventRef(event_id, at)
    assert ref.day == at.date()


def _record(kind: str = "like") -> NotificationRecord:
    return NotificationRecord(
        id=new_id(),
        recipient_id=uuid.uuid4(),
        kind=kind,
        actor_id=None,
        post_id=None,
        comment_id=None,
        count=1,
        created_at=dt.datetime.now(dt.UTC),
        read_at=None,
    )


class _FailingPush:
    def __init__(self) -> None:
        self.tried: list[PushMessage] = []

    async def send(self, message: PushMessage) -> None:
        self.tried.append(message)
        raise ConnectionError("provider down")


class _Publisher:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[tuple[uuid.UUID, uuid.UUID]] = []

    async def notification_created(self, recipient_id, notification_id) -> None:
        self.seen.append((recipient_id, notification_id))
        if self.fail:
            raise ConnectionError("redis down")


async def test_delivery_is_best_effort_and_pushes_created_notifications_only(caplog):
    created, updated = _record(), _record()
    push, publisher = _FailingPush(), _Publisher(fail=True)
    delivery = Delivery(None, push=push, publisher=publisher)  # no lookups: no actors
    with caplog.at_level(logging.WARNING, logger="roost.notifications"):
        await delivery.deliver(Changes(created=[created], updated=[updated]))  # never raises
    assert publisher.seen == [
        (created.recipient_id, created.id),
        (updated.recipient_id, updated.id),
    ]
    assert [m.notification_id for m in push.tried] == [created.id]  # coalesced: no push
    assert push.tried[0].body == "Someone liked your post."
    assert "push of notification" in caplog.text


async def test_logging_push_sender_logs(caplog):
    with caplog.at_level(logging.INFO, logger="roost.push"):
        await LoggingPushSender().send(
            PushMessage(uuid.uuid4(), uuid.uuid4(), "follow", "alice started following you.")
        )
    assert "alice started following you." in caplog.text
