"""PUSH_PROVIDER picks the worker's push transport; a bad configuration fails at start."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from pydantic import ValidationError

from adapters.fcm import FcmConfigError, FcmTransport
from app.container import push_transport
from app.settings import Settings
from domain.db import utcnow
from domain.devices.store import DeviceRecord
from domain.notifications.push import LoggingTransport, PushMessage


async def test_the_default_provider_logs_each_device(caplog):
    transport = push_transport(Settings())
    assert isinstance(transport, LoggingTransport)
    device = DeviceRecord(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), "ios", "tok-12345678", utcnow())
    message = PushMessage(device.user_id, uuid.uuid4(), "like", "bob liked your post.")
    with caplog.at_level(logging.INFO, logger="roost.push"):
        outcome = await transport.deliver(device, message)
    assert outcome.kind == "delivered"
    assert "ios device …12345678" in caplog.text and "bob liked your post." in caplog.text


async def test_fcm_reads_its_service_account(tmp_path):
    key = tmp_path / "key.json"
    key.write_text(
        json.dumps(
            {
                "project_id": "p1",
                "client_email": "a@p1.iam.gserviceaccount.com",
                "private_key": "-----BEGIN PRIVATE KEY-----\n...",
            }
        )
    )
    transport = push_transport(
        Settings(PUSH_PROVIDER="fcm", FCM_CREDENTIALS_FILE=key, FCM_ENDPOINT="http://x:1")
    )
    assert isinstance(transport, FcmTransport)
    assert transport.url == "http://x:1/v1/projects/p1/messages:send"
    assert transport.account.token_uri == "https://oauth2.googleapis.com/token"
    await transport.aclose()
    override = push_transport(
        Settings(PUSH_PROVIDER="fcm", FCM_CREDENTIALS_FILE=key, FCM_PROJECT_ID="p2")
    )
    assert override.url.endswith("/v1/projects/p2/messages:send")
    await override.aclose()


def test_fcm_without_or_with_a_bad_key_file_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="FCM_CREDENTIALS_FILE"):
        Settings(PUSH_PROVIDER="fcm")
    missing = Settings(PUSH_PROVIDER="fcm", FCM_CREDENTIALS_FILE=tmp_path / "nope.json")
    with pytest.raises(FcmConfigError):
        push_transport(missing)
    (tmp_path / "partial.json").write_text('{"project_id": "p"}')
    with pytest.raises(FcmConfigError, match="client_email"):
        push_transport(
            Settings(PUSH_PROVIDER="fcm", FCM_CREDENTIALS_FILE=tmp_path / "partial.json")
        )
