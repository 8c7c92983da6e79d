"""Pushes through FCM HTTP v1 against a local fake that speaks its formats
(tests/support/fake_fcm.py): every device of the recipient, one cached OAuth access
token, tokens the provider calls gone are deleted, transient refusals retried no sooner
than Retry-After, and the notification delivery path end to end."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

import pytest
from sqlalchemy import text

from adapters.fcm import FcmTransport, ServiceAccount, retry_after
from domain.db import new_id, utcnow
from domain.devices.register_device import register_device
from domain.notifications.delivery import Delivery
from domain.notifications.push import DevicePushSender, PushMessage, RetryPolicy
from domain.notifications.queries import NotificationRecord
from domain.notifications.store import Changes
from tests.support.fake_fcm import (
    INVALID_ARGUMENT,
    NOT_FOUND,
    SENDER_ID_MISMATCH,
    UNREGISTERED,
    quota_exceeded,
    start_fake_fcm,
    unavailable,
)


@pytest.fixture
async def fcm(tmp_path):
    """``(fake server, FcmTransport)``: the transport's key file points at the fake."""
    fake, server, task = await start_fake_fcm()
    account = ServiceAccount.from_file(fake.credentials(tmp_path))
    transport = FcmTransport(account, endpoint=fake.base_url, timeout_s=5.0)
    try:
        yield fake, transport
    finally:
        await transport.aclose()
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def with_devices(engine, user, *tokens: str) -> None:
    for token in tokens:
        await register_device(engine, user.id, new_id(), platform="android", token=token)


async def tokens_of(engine, user) -> set[str]:
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT token FROM device_tokens WHERE user_id = :u"), {"u": user.id}
        )
        return set(rows.scalars())


def message_to(user, kind: str = "follow") -> PushMessage:
    return PushMessage(user.id, uuid.uuid4(), kind, "alice started following you.", {"x": "1"})


def device_token(name: str) -> str:
    return f"{name}:{uuid.uuid4().hex}"


async def test_every_device_gets_the_push_with_one_cached_access_token(engine, make_users, fcm):
    fake, transport = fcm
    (user,) = await make_users(1, prefix="pf")
    tokens = [device_token(f"ok{i}") for i in range(3)]
    await with_devices(engine, user, *tokens)
    sender = DevicePushSender(engine, transport)

    outcomes = await sender.send(message_to(user))
    assert [o.kind for o in outcomes] == ["delivered"] * 3
    assert {s.device_token for s in fake.sent} == set(tokens)
    first = fake.sent[0]
    assert first.authorization == "Bearer ya29.fake-1"
    assert first.message["notification"] == {
        "title": "Roost",
        "body": "alice started following you.",
    }
    assert first.message["data"] == {"kind": "follow", "x": "1"}
    assert len(fake.token_requests) == 1  # three concurrent sends, one token request

    await sender.send(message_to(user))
    assert len(fake.sent) == 6 and len(fake.token_requests) == 1  # cached
    # An hour later the token is renewed, once.
    clock = transport.tokens.clock
    transport.tokens.clock = lambda: clock() + 3600
    await sender.send(message_to(user))
    assert len(fake.token_requests) == 2
    assert fake.sent[-1].authorization == "Bearer ya29.fake-2"


async def test_tokens_the_provider_calls_gone_are_deleted(engine, make_users, fcm):
    fake, transport = fcm
    (user,) = await make_users(1, prefix="pg")
    ok, unregistered, not_found, mismatch, invalid = (
        device_token(n) for n in ("ok", "unregistered", "notfound", "mismatch", "invalid")
    )
    await with_devices(engine, user, ok, unregistered, not_found, mismatch, invalid)
    fake.script(unregistered, UNREGISTERED)
    fake.script(not_found, NOT_FOUND)
    fake.script(mismatch, SENDER_ID_MISMATCH)
    fake.script(invalid, INVALID_ARGUMENT)

    outcomes = await DevicePushSender(engine, transport).send(message_to(user))
    assert sorted(o.kind for o in outcomes) == [
        "delivered",
        "failed",
        "invalid_token",
        "invalid_token",
        "invalid_token",
    ]
    # INVALID_ARGUMENT may be the message's fault: that token stays, and is not retried.
    assert await tokens_of(engine, user) == {ok, invalid}
    assert len(fake.sends_to(invalid)) == 1


async def test_transient_refusals_are_retried_no_sooner_than_retry_after(engine, make_users, fcm):
    fake, transport = fcm
    (user,) = await make_users(1, prefix="pr")
    busy, flaky, down, later = (device_token(n) for n in ("busy", "flaky", "down", "later"))
    await with_devices(engine, user, busy, flaky, down, later)
    fake.script(busy, quota_exceeded("1"))
    fake.script(flaky, unavailable(503), unavailable(500))
    fake.script(down, *[unavailable(503)] * 5)
    fake.script(later, quota_exceeded("120"))  # longer than the budget: given up at once

    policy = RetryPolicy(max_attempts=3, base_s=0.05, max_backoff_s=0.2, budget_s=3.0)
    outcomes = await DevicePushSender(engine, transport, policy).send(message_to(user))
    by_token = {t: [s.at for s in fake.sends_to(t)] for t in (busy, flaky, down, later)}

    busy_at = by_token[busy]
    assert len(busy_at) == 2 and busy_at[1] - busy_at[0] >= 1.0  # Retry-After: 1
    assert len(by_token[flaky]) == 3  # 503, 500, then delivered
    assert len(by_token[down]) == 3  # max_attempts, then given up
    assert len(by_token[later]) == 1
    assert sorted(o.kind for o in outcomes) == ["delivered", "delivered", "failed", "failed"]
    assert await tokens_of(engine, user) == {busy, flaky, down, later}  # none deleted


async def test_a_refused_access_token_is_renewed_and_the_send_repeated(engine, make_users, fcm):
    fake, transport = fcm
    (user,) = await make_users(1, prefix="pa")
    token = device_token("ok")
    await with_devices(engine, user, token)
    sender = DevicePushSender(engine, transport)
    await sender.send(message_to(user))
    fake.valid_tokens.clear()  # revoked on Google's side
    (outcome,) = await sender.send(message_to(user))
    assert outcome.kind == "delivered"
    assert [s.authorization for s in fake.sends_to(token)] == [
        "Bearer ya29.fake-1",
        "Bearer ya29.fake-1",
        "Bearer ya29.fake-2",
    ]


async def test_a_notification_is_pushed_to_the_recipients_devices(engine, make_users, fcm, caplog):
    fake, transport = fcm
    liker, author = await make_users(2, prefix="pn")
    gone, ok = device_token("gone"), device_token("ok")
    await with_devices(engine, author, gone, ok)
    fake.script(gone, UNREGISTERED)
    record = NotificationRecord(
        id=new_id(),
        recipient_id=author.id,
        kind="like",
        actor_id=liker.id,
        post_id=None,
        comment_id=None,
        count=3,
        created_at=utcnow(),
        read_at=None,
    )
    delivery = Delivery(engine, push=DevicePushSender(engine, transport))
    with caplog.at_level(logging.INFO, logger="roost.push"):
        await delivery.deliver(Changes(created=[record], updated=[]))
    (sent,) = fake.sends_to(ok)
    assert sent.message["notification"]["body"] == f"{liker.username} and 2 others liked your post."
    assert sent.message["data"] == {"kind": "like", "notification_id": str(record.id)}
    assert await tokens_of(engine, author) == {ok}
    assert "forgotten" in caplog.text


def test_retry_after_reads_seconds_and_http_dates():
    assert retry_after("7") == 7.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert retry_after(None) is None and retry_after("soon") is None
