"""Push delivery to devices, behind an interface (issue item 5: "a logging implementation;
real providers plug in later").

A sender gets one :class:`PushMessage` per notification created (coalesced likes are
not pushed again) after the notification committed. Delivery is best effort: whatever a
sender raises is logged and never fails the job (seeds/chroma-architecture.md: "push
delivery is best-effort ... in-app notifications are always written to PostgreSQL").
A real provider (FCM, APNs) looks up the recipient's device tokens itself and should
hand off to its own queue rather than call out inline: the consumer job's time limit
(JOB_TIMEOUT_S) covers this call.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from typing import Protocol

log = logging.getLogger("roost.push")

#: Longest comment excerpt in a push text, in code points.
EXCERPT_MAX = 80


@dataclass(frozen=True, slots=True)
class PushMessage:
    """One push: who gets it, the notification it opens, and its text.

    ``data`` carries ids for the app's deep link (``notification_id``, ``post_id``).
    """

    recipient_id: uuid.UUID
    notification_id: uuid.UUID
    kind: str
    body: str
    data: dict[str, str] = field(default_factory=dict)


class PushSender(Protocol):
    """Sends pushes to a user's devices. May raise; the caller logs and goes on."""

    async def send(self, message: PushMessage) -> None: ...


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
    """The push text of a notification, e.g. ``alice and 2 others liked your post.``

    ``actor`` is the actor's username (None for a digest, or an actor who is gone);
    ``count`` the people behind it; ``excerpt`` the comment's text for comments and
    replies (cut to EXCERPT_MAX code points).
    """
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
        case "like":
            return f"{who} liked your post."
        case "comment":
            return f"{who} commented on your post{quote}"
        case "reply":
            return f"{who} replied to your comment{quote}"
        case "mention":
            return f"{who} mentioned you{quote}"
    return f"{who} did something."
