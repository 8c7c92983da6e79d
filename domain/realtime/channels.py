"""Channel names and the JSON events that travel on them."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

#: Event types (the ``type`` field of every event).
FEED_ITEM = "feed_item"  # {"post_id", "author_id"} on rt:user:{follower}
NOTIFICATION = "notification"  # {"notification_id"} on rt:user:{recipient}
ENGAGEMENT = "engagement"  # {"post_id"} on rt:post:{post}

#: Sorted set of users with an open feed subscription, scored by expiry (epoch ms).
ONLINE_KEY = "rt:online"


def now_ms() -> int:
    """Epoch milliseconds: the clock of presence scores."""
    return int(time.time() * 1000)


def user_channel(user_id: uuid.UUID | str) -> str:
    """``rt:user:{<id>}``: feed items and notifications of one user."""
    return f"rt:user:{{{user_id}}}"


def post_channel(post_id: uuid.UUID | str) -> str:
    """``rt:post:{<id>}``: engagement changes (likes, comments) of one post."""
    return f"rt:post:{{{post_id}}}"


def encode_event(kind: str, **ids: uuid.UUID | str) -> bytes:
    """``{"type": kind, <name>: "<uuid>", ...}`` as compact JSON bytes."""
    return json.dumps(
        {"type": kind, **{k: str(v) for k, v in ids.items()}}, separators=(",", ":")
    ).encode()


def decode_event(data: bytes | str) -> dict[str, Any] | None:
    """Parse an event; None for anything that is not a JSON object with a ``type``."""
    try:
        event = json.loads(data)
    except (ValueError, TypeError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("type"), str) else None
