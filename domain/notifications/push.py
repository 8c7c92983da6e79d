"""Push delivery to devices, best effort (docs/api/push.md "Push"): a sender's failure is logged,
never fails the job."""

from __future__ import annotations

import asyncio
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.devices.store import DeviceRecord, devices_of, forget_token

log = logging.getLogger("roost.push")

#: Longest comment excerpt in a push text, in code points.
EXCERPT_MAX = 80


@dataclass(frozen=True, slots=True)
class PushMessage:
    """One push: recipient, notification, text; ``data`` holds deep-link ids."""

    recipient_id: uuid.UUID
    notification_id: uuid.UUID
    kind: str
    body: str
    data: dict[str, str] = field(default_factory=dict)


class PushSender(Protocol):
    """Sends pushes to a user's devices. May raise; the caller logs and goes on."""

    async def send(self, message: PushMessage) -> object: ...  # the result is not used


class LoggingPushSender:
    """The development sender: logs each push at INFO on ``roost.push``."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or log

    async def send(self, message: PushMessage) -> None:
        """Log ``message`` (recipient, kind, text)."""
        self.log.info(
            "push to %s (%s, %s): %s",
            message.recipient_id,
            message.kind,
            message.notification_id,
            message.body,
        )


def push_text(kind: str, actor: str | None, count: int, excerpt: str | None = None) -> str:
    """A notification's push text; ``actor`` None for a digest, ``excerpt`` cut to EXCERPT_MAX."""
    who = actor or "Someone"
    others = count - 1
    if others > 0:
        who += f" and {others} other{'s' if others > 1 else ''}"
    quote = ""
    if excerpt:
        cut = excerpt if len(excerpt) <= EXCERPT_MAX else excerpt[: EXCERPT_MAX - 1] + "…"
        quote = f': "{cut}"'
    match kind:
        case "follow":
            return f"{who} started following you."
        case "follow_digest":
            return f"{count} {'person' if count == 1 else 'people'} followed you."
        case "follow_request":
            return f"{who} requested to follow you."
        case "follow_request_approved":
            return f"{who} approved your follow request."
        case "like":
            return f"{who} liked your post."
        case "comment":
            return f"{who} commented on your post{quote}"
        case "reply":
            return f"{who} replied to your comment{quote}"
        case "mention":
            return f"{who} mentioned you{quote}"
        case "post_published":
            return "Your post is published."
        case "post_failed":
            return "Your post could not be published."
    return f"{who} did something."


@dataclass(frozen=True, slots=True)
class PushOutcome:
    """A provider's answer per device: ``delivered``, ``invalid_token``, ``retry`` (after
    ``retry_after`` s) or ``failed``."""

    kind: str
    detail: str = ""
    retry_after: float | None = None

    @classmethod
    def delivered(cls, detail: str = "") -> PushOutcome:
        return cls("delivered", detail)

    @classmethod
    def invalid_token(cls, detail: str) -> PushOutcome:
        return cls("invalid_token", detail)

    @classmethod
    def retry(cls, detail: str, retry_after: float | None = None) -> PushOutcome:
        return cls("retry", detail, retry_after)

    @classmethod
    def failed(cls, detail: str) -> PushOutcome:
        return cls("failed", detail)


class PushTransport(Protocol):
    """Sends one message to one device once; answers a :class:`PushOutcome`, never raises for the
    provider."""

    async def deliver(self, device: DeviceRecord, message: PushMessage) -> PushOutcome: ...


class LoggingTransport:
    """The development transport: logs each push to each device on ``roost.push``."""

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self.log = logger or log

    async def deliver(self, device: DeviceRecord, message: PushMessage) -> PushOutcome:
        """Log the push (recipient, device, kind, text); always delivered."""
        self.log.info(
            "push to %s on %s device …%s (%s, %s): %s",
            message.recipient_id,
            device.platform,
            device.token[-8:],
            message.kind,
            message.notification_id,
            message.body,
        )
        return PushOutcome.delivered()


@dataclass(frozen=True)
class RetryPolicy:
    """``max_attempts`` per device; backoff ``base_s`` x 2^(n-1) ±20 % up to ``max_backoff_s`` or
    Retry-After; all within ``budget_s``."""

    max_attempts: int = 3
    base_s: float = 0.2
    max_backoff_s: float = 2.0
    budget_s: float = 3.0

    def backoff(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        wait = min(self.max_backoff_s, self.base_s * 2.0 ** (attempt - 1))
        wait *= rng.uniform(0.8, 1.2)
        return max(wait, retry_after or 0.0)


class DevicePushSender:
    """Sends to every device concurrently, retrying (:class:`RetryPolicy`) and deleting dead tokens;
    never raises per device."""

    def __init__(
        self,
        engine: AsyncEngine,
        transport: PushTransport,
        policy: RetryPolicy | None = None,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self.engine = engine
        self.transport = transport
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.rng = rng or random.Random()

    async def send(self, message: PushMessage) -> list[PushOutcome]:
        """Push to each device; return outcomes, newest-registered device first."""
        async with self.engine.connect() as conn:
            devices = await devices_of(conn, message.recipient_id)
        if not devices:
            return []
        return list(await asyncio.gather(*(self._one(d, message) for d in devices)))

    async def _one(self, device: DeviceRecord, message: PushMessage) -> PushOutcome:
        policy = self.policy
        deadline = time.monotonic() + policy.budget_s
        outcome = PushOutcome.failed("not attempted")
        for attempt in range(1, policy.max_attempts + 1):
            try:
                outcome = await self.transport.deliver(device, message)
            except Exception as exc:  # a transport bug must not stop the other devices
                log.warning("push transport raised for device %s", device.id, exc_info=True)
                return PushOutcome.failed(f"transport error: {exc!r}")
            if outcome.kind == "invalid_token":
                async with self.engine.begin() as conn:
                    await forget_token(conn, device.id, device.token)
                log.info(
                    "push token of device %s is gone (%s): forgotten", device.id, outcome.detail
                )
                return outcome
            if outcome.kind != "retry":
                if outcome.kind == "failed":
                    log.warning("push to device %s failed: %s", device.id, outcome.detail)
                return outcome
            if attempt == policy.max_attempts:
                break
            wait = policy.backoff(attempt, outcome.retry_after, self.rng)
            if time.monotonic() + wait > deadline:
                log.warning(
                    "push to device %s given up: %s, next try in %.1f s is past the budget",
                    device.id,
                    outcome.detail,
                    wait,
                )
                return PushOutcome.failed(f"gave up: {outcome.detail}")
            await self.sleep(wait)
        log.warning(
            "push to device %s given up after %d attempts: %s",
            device.id,
            policy.max_attempts,
            outcome.detail,
        )
        return PushOutcome.failed(f"gave up after {policy.max_attempts} attempts: {outcome.detail}")
