"""What the virtual users saw: one :class:`Outcome` per request (HTTP or a WebSocket
message), classified as the audit needs it."""

from __future__ import annotations

import base64
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx


def now() -> float:
    return time.monotonic()


@dataclass(frozen=True)
class Outcome:
    """One request: ``op`` (operation), when it started and ended (monotonic seconds),
    ``code``: ``ok``, ``<status> <GraphQL code>`` (``503 SERVICE_UNAVAILABLE``,
    ``200 INTERNAL_SERVER_ERROR``) or ``conn <exception>`` when no answer came."""

    op: str
    started: float
    ended: float
    code: str

    @property
    def ok(self) -> bool:
        return self.code == "ok"

    @property
    def server_error(self) -> bool:
        """An error no outage explains: a 5xx other than the documented 503, or a
        masked internal error in a 200/4xx body."""
        status, _, gql = self.code.partition(" ")
        if self.code in ("ok", "503 SERVICE_UNAVAILABLE") or status == "conn":
            return False
        return (status.isdigit() and int(status) >= 500) or gql == "INTERNAL_SERVER_ERROR"


@dataclass
class Recorder:
    outcomes: list[Outcome] = field(default_factory=list)
    #: (op, code) -> the first response body of that kind (for the report).
    samples: dict[tuple[str, str], str] = field(default_factory=dict)

    def add(self, outcome: Outcome, body: str = "") -> None:
        self.outcomes.append(outcome)
        if not outcome.ok:
            self.samples.setdefault((outcome.op, outcome.code), body[:400])


def classify(resp: httpx.Response) -> tuple[str, dict[str, Any] | None]:
    """(code, the JSON body or None) of a GraphQL-over-HTTP answer."""
    try:
        body = resp.json()
    except ValueError:
        return f"{resp.status_code} not-json", None
    if not isinstance(body, dict):
        return f"{resp.status_code} not-an-object", None
    errors = body.get("errors")
    if resp.status_code == 200 and not errors:
        return "ok", body
    code = "none"
    if errors and isinstance(errors, list) and isinstance(errors[0], dict):
        code = str((errors[0].get("extensions") or {}).get("code", "none"))
    if (
        resp.status_code == 503
        and code == "SERVICE_UNAVAILABLE"
        and not resp.headers.get("retry-after")
    ):
        code = "SERVICE_UNAVAILABLE-without-Retry-After"
    return f"{resp.status_code} {code}", body


#: Answers after which a client sends the same write again (under the same key).
RETRYABLE = ("503 SERVICE_UNAVAILABLE", "409 IDEMPOTENCY_KEY_IN_FLIGHT")


@dataclass(frozen=True)
class Answer:
    data: dict[str, Any] | None  # ``data`` of a clean answer
    code: str  # as Outcome.code
    retry_after: float  # seconds (Retry-After), 1 without one

    @property
    def retryable(self) -> bool:
        """Unanswered (it may or may not have happened): worth sending again."""
        return self.code in RETRYABLE or self.code.startswith("conn")


async def ask(
    http: httpx.AsyncClient,
    rec: Recorder,
    op: str,
    query: str,
    variables: dict[str, Any] | None = None,
    token: str | None = None,
    key: str | None = None,
) -> Answer:
    """POST one document (``key``: its Idempotency-Key); record its outcome."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if key is not None:
        headers["Idempotency-Key"] = key
    started = now()
    try:
        resp = await http.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
    except httpx.HTTPError as exc:
        code = f"conn {type(exc).__name__}"
        rec.add(Outcome(op, started, now(), code), repr(exc))
        return Answer(None, code, 1.0)
    code, body = classify(resp)
    rec.add(Outcome(op, started, now(), code), resp.text)
    try:
        retry_after = float(resp.headers.get("retry-after", "1"))
    except ValueError:
        retry_after = 1.0
    data = (body or {}).get("data") if code == "ok" else None
    return Answer(data if isinstance(data, dict) else None, code, retry_after)


async def call(
    http: httpx.AsyncClient,
    rec: Recorder,
    op: str,
    query: str,
    variables: dict[str, Any] | None = None,
    token: str | None = None,
) -> dict[str, Any] | None:
    """POST one document; record its outcome; the ``data`` of a clean answer, else None."""
    return (await ask(http, rec, op, query, variables, token)).data


def gid(type_name: str, pk: uuid.UUID) -> str:
    """A Relay global id, ``base64("<Type>:<uuid>")``."""
    return base64.b64encode(f"{type_name}:{pk}".encode()).decode()


def pk(global_id: str) -> uuid.UUID:
    """The UUID inside a Relay global id."""
    return uuid.UUID(base64.b64decode(global_id).decode().split(":", 1)[1])
