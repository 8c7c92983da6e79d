"""Firebase Cloud Messaging HTTP v1 as a :class:`~domain.notifications.push.PushTransport`
(https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages/send), with
service-account tokens by the JWT bearer grant (RFC 7523). How answers map to outcomes:
docs/api/push.md "Push".
"""

from __future__ import annotations

import asyncio
import datetime as dt
import email.utils
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import jwt

from domain.devices.store import DeviceRecord
from domain.notifications.push import PushMessage, PushOutcome

SCOPE = "https://www.googleapis.com/auth/firebase.messaging"
DEFAULT_ENDPOINT = "https://fcm.googleapis.com"
#: An access token is renewed this long before it expires.
TOKEN_MARGIN_S = 60.0
_RETRY_STATUSES = {429, 500, 502, 503, 504}
_GONE_CODES = {"UNREGISTERED", "SENDER_ID_MISMATCH"}


class FcmConfigError(ValueError):
    """The service-account key file is missing, unreadable or incomplete."""


@dataclass(frozen=True)
class ServiceAccount:
    """The fields of a Google service-account key file that FCM needs."""

    project_id: str
    client_email: str
    private_key: str
    private_key_id: str | None
    token_uri: str

    @classmethod
    def from_file(cls, path: Path, project_id: str | None = None) -> ServiceAccount:
        """Read a JSON key file (``project_id`` overrides); raises FcmConfigError."""
        try:
            info = json.loads(Path(path).read_text())
            return cls(
                project_id=project_id or info["project_id"],
                client_email=info["client_email"],
                private_key=info["private_key"],
                private_key_id=info.get("private_key_id"),
                token_uri=info.get("token_uri") or "https://oauth2.googleapis.com/token",
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise FcmConfigError(f"FCM credentials {path}: {exc!r}") from exc


class AccessTokens:
    """Access tokens cached until ``TOKEN_MARGIN_S`` before expiry, one request shared by
    concurrent callers. ``clock`` (epoch s) ages the cache; assertions use real time."""

    def __init__(
        self,
        account: ServiceAccount,
        client: httpx.AsyncClient,
        *,
        clock: Any = time.time,
    ) -> None:
        self.account = account
        self.client = client
        self.clock = clock
        self._token: str | None = None
        self._expires_at = 0.0
        self._lock = asyncio.Lock()

    async def get(self) -> str:
        """A valid access token; raises httpx.HTTPError when the token endpoint fails."""
        if self._token and self.clock() < self._expires_at - TOKEN_MARGIN_S:
            return self._token
        async with self._lock:
            if self._token and self.clock() < self._expires_at - TOKEN_MARGIN_S:
                return self._token
            now = self.clock()
            response = await self.client.post(
                self.account.token_uri,
                data={
                    "grant_type": "urn:ietf:params:oauth:grant-type:jwt-bearer",
                    "assertion": self.assertion(time.time()),
                },
            )
            response.raise_for_status()
            body = response.json()
            self._token = body["access_token"]
            self._expires_at = now + float(body.get("expires_in", 3600))
            return self._token

    def assertion(self, now: float) -> str:
        """The signed JWT (RS256) exchanged for an access token."""
        issued = int(now)
        claims = {
            "iss": self.account.client_email,
            "scope": SCOPE,
            "aud": self.account.token_uri,
            "iat": issued,
            "exp": issued + 3600,
        }
        headers = {"kid": self.account.private_key_id} if self.account.private_key_id else None
        return jwt.encode(claims, self.account.private_key, algorithm="RS256", headers=headers)

    def invalidate(self, token: str) -> None:
        """Forget ``token`` (the API refused it), unless it was already replaced."""
        if self._token == token:
            self._token = None


def retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (RFC 9110 §10.2.3); None if unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    current = now if now is not None else time.time()
    return max(0.0, when.timestamp() - current)


def fcm_message(device: DeviceRecord, message: PushMessage) -> dict[str, Any]:
    """The send request's ``message``: data values are strings, as FCM requires."""
    data = {"kind": message.kind, **message.data}
    return {
        "token": device.token,
        "notification": {"title": "Roost", "body": message.body},
        "data": data,
        "android": {"collapse_key": message.kind},
        "apns": {"headers": {"apns-collapse-id": message.kind}},
    }


def _error_code(body: Any) -> tuple[str, str]:
    """``(status, FcmError errorCode)`` of an error response (empty when absent)."""
    error = body.get("error", {}) if isinstance(body, dict) else {}
    status = str(error.get("status", ""))
    code = ""
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and detail.get("errorCode"):
            code = str(detail["errorCode"])
    return status, code


class FcmTransport:
    """Sends through FCM HTTP v1 with one pooled ``httpx.AsyncClient`` (HTTP keep-alive)."""

    def __init__(
        self,
        account: ServiceAccount,
        *,
        endpoint: str = DEFAULT_ENDPOINT,
        timeout_s: float = 2.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.account = account
        self.url = f"{endpoint.rstrip('/')}/v1/projects/{account.project_id}/messages:send"
        self.client = client or httpx.AsyncClient(timeout=timeout_s)
        self.tokens = AccessTokens(account, self.client)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self.client.aclose()

    async def deliver(self, device: DeviceRecord, message: PushMessage) -> PushOutcome:
        """Send ``message`` to ``device`` once (twice when the access token was refused)."""
        body = {"message": fcm_message(device, message)}
        for fresh_token in (False, True):
            try:
                token = await self.tokens.get()
                response = await self.client.post(
                    self.url, json=body, headers={"Authorization": f"Bearer {token}"}
                )
            except httpx.HTTPStatusError as exc:  # the token endpoint refused
                status = exc.response.status_code
                detail = f"OAuth token endpoint answered {status}"
                if status in _RETRY_STATUSES:
                    return PushOutcome.retry(
                        detail, retry_after(exc.response.headers.get("retry-after"))
                    )
                return PushOutcome.failed(detail)
            except httpx.HTTPError as exc:
                return PushOutcome.retry(f"{type(exc).__name__}: {exc}")
            if response.status_code == 401 and not fresh_token:
                self.tokens.invalidate(token)
                continue
            return self._outcome(response)
        return PushOutcome.failed("the access token was refused twice")

    @staticmethod
    def _outcome(response: httpx.Response) -> PushOutcome:
        if response.status_code == 200:
            try:
                return PushOutcome.delivered(str(response.json().get("name", "")))
            except ValueError:
                return PushOutcome.delivered()
        try:
            payload = response.json()
        except ValueError:
            payload = {}
        status, code = _error_code(payload)
        detail = f"{response.status_code} {status or '-'} {code or '-'}"
        if code in _GONE_CODES or response.status_code == 404 or status == "NOT_FOUND":
            return PushOutcome.invalid_token(detail)
        if response.status_code in _RETRY_STATUSES:
            return PushOutcome.retry(detail, retry_after(response.headers.get("retry-after")))
        return PushOutcome.failed(detail)
