"""A local stand-in for Google's OAuth token endpoint and FCM HTTP v1, served by uvicorn
on a free port of 127.0.0.1 inside the test's event loop.

It speaks the real formats: the JWT bearer grant (RFC 7523; the assertion is verified
with the service account's public key) answering ``{access_token, expires_in,
token_type}``, and ``POST /v1/projects/<id>/messages:send`` answering ``{"name": ...}``
or Google's error object ``{"error": {code, message, status, details: [{"@type":
"type.googleapis.com/google.firebase.fcm.v1.FcmError", errorCode}]}}``. What it answers
to a device token is scripted (:meth:`FakeFcm.script`); every request is recorded.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
from collections import defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.support.polling import PATIENCE_S

PROJECT = "roost-test"
CLIENT_EMAIL = "push@roost-test.iam.gserviceaccount.com"
SCOPE = "https://www.googleapis.com/auth/firebase.messaging"


@dataclass
class Sent:
    """One send request as the server saw it."""

    at: float  # time.monotonic()
    device_token: str
    authorization: str
    message: dict[str, Any]


def fcm_error(code: int, status: str, error_code: str | None, message: str) -> dict:
    """Google's error body, as FCM v1 returns it."""
    details = (
        [{"@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": error_code}]
        if error_code
        else []
    )
    return {"error": {"code": code, "message": message, "status": status, "details": details}}


UNREGISTERED = (
    404,
    {},
    fcm_error(404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found."),
)
NOT_FOUND = (404, {}, fcm_error(404, "NOT_FOUND", None, "Requested entity was not found."))
SENDER_ID_MISMATCH = (
    403,
    {},
    fcm_error(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch"),
)
INVALID_ARGUMENT = (
    400,
    {},
    fcm_error(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid value"),
)


def quota_exceeded(retry_after: str | None) -> tuple:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return 429, headers, fcm_error(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "Quota exceeded")


def unavailable(status: int = 503, retry_after: str | None = None) -> tuple:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return (
        status,
        headers,
        fcm_error(status, "UNAVAILABLE", "UNAVAILABLE", "The service is unavailable."),
    )


@dataclass
class FakeFcm:
    """The server's state: keys, scripted answers, issued tokens and what it received."""

    private_pem: str
    public_key: Any
    port: int = 0
    expires_in: int = 3600
    token_requests: list[dict] = field(default_factory=list)
    valid_tokens: set[str] = field(default_factory=set)
    sent: list[Sent] = field(default_factory=list)
    _script: dict[str, deque] = field(default_factory=lambda: defaultdict(deque))

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, device_token: str, *answers: tuple) -> None:
        """Answer the next sends to ``device_token`` with ``answers`` ((status, headers,
        body) each), in order; then 200."""
        self._script[device_token].extend(answers)

    def sends_to(self, device_token: str) -> list[Sent]:
        return [s for s in self.sent if s.device_token == device_token]

    def credentials(self, folder: Path) -> Path:
        """Write a service-account key file whose token_uri is this server."""
        path = folder / "service-account.json"
        path.write_text(
            json.dumps(
                {
                    "type": "service_account",
                    "project_id": PROJECT,
                    "private_key_id": "key-1",
                    "private_key": self.private_pem,
                    "client_email": CLIENT_EMAIL,
                    "token_uri": f"{self.base_url}/token",
                }
            )
        )
        return path

    async def token(self, request: Request) -> JSONResponse:
        form = {k: v[0] for k, v in urllib.parse.parse_qs((await request.body()).decode()).items()}
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
        try:
            claims = jwt.decode(
                str(form.get("assertion")),
                self.public_key,
                algorithms=["RS256"],
                audience=f"{self.base_url}/token",
                issuer=CLIENT_EMAIL,
            )
        except jwt.PyJWTError as exc:
            return JSONResponse({"error": "invalid_grant", "detail": str(exc)}, status_code=400)
        if claims.get("scope") != SCOPE:
            return JSONResponse({"error": "invalid_scope"}, status_code=400)
        self.token_requests.append(claims)
        access = f"ya29.fake-{len(self.token_requests)}"
        self.valid_tokens.add(access)
        return JSONResponse(
            {"access_token": access, "expires_in": self.expires_in, "token_type": "Bearer"}
        )

    async def send(self, request: Request) -> JSONResponse:
        if request.path_params["project"] != PROJECT:
            return JSONResponse(fcm_error(404, "NOT_FOUND", None, "no such project"), 404)
        authorization = request.headers.get("authorization", "")
        body = await request.json()
        message = body["message"]
        self.sent.append(Sent(time.monotonic(), message["token"], authorization, message))
        if authorization.removeprefix("Bearer ") not in self.valid_tokens:
            return JSONResponse(
                fcm_error(401, "UNAUTHENTICATED", None, "Request had invalid credentials."), 401
            )
        queue = self._script.get(message["token"])
        if queue:
            status, headers, answer = queue.popleft()
            return JSONResponse(answer, status_code=status, headers=headers)
        return JSONResponse({"name": f"projects/{PROJECT}/messages/{len(self.sent)}"})


async def start_fake_fcm() -> tuple[FakeFcm, uvicorn.Server, asyncio.Task]:
    """Start the fake on a free port; return it, its server and its serving task."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    fake = FakeFcm(private_pem=pem, public_key=key.public_key())
    app = Starlette(
        routes=[
            Route("/token", fake.token, methods=["POST"]),
            Route("/v1/projects/{project}/messages:send", fake.send, methods=["POST"]),
        ]
    )
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + PATIENCE_S
    while not server.started:
        if task.done() or time.monotonic() > deadline:
            raise RuntimeError("the fake FCM server did not start")
        await asyncio.sleep(0.01)
    fake.port = server.servers[0].sockets[0].getsockname()[1]
    return fake, server, task
