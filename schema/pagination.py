"""Connection arguments and opaque keyset cursors (Relay Cursor Connections spec)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import uuid

from graphql import GraphQLError
from strawberry import relay

from domain.feed.timelines import Entry
from domain.social.queries import Position

DEFAULT_PAGE_SIZE = 20
_PREFIX = "k1:"


def encode_cursor(position: Position) -> str:
    """Return the opaque cursor of a keyset position (timestamp, id)."""
    ts, pk = position
    raw = f"{_PREFIX}{ts.astimezone(dt.UTC).isoformat(timespec='microseconds')}|{pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    """Return the position inside a cursor; raise a BAD_USER_INPUT GraphQLError if malformed."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        if not raw.startswith(_PREFIX):
            raise ValueError(raw)
        ts, pk = raw[len(_PREFIX) :].split("|", 1)
        return dt.datetime.fromisoformat(ts), uuid.UUID(pk)
    except (ValueError, UnicodeError, binascii.Error):
        raise GraphQLError(
            "The 'after' cursor is not valid.", extensions={"code": "BAD_USER_INPUT"}
        ) from None


def check_first(first: int, max_page_size: int) -> int:
    """Return ``first`` if 0 <= first <= max_page_size, else raise a BAD_USER_INPUT error."""
    if first < 0 or first > max_page_size:
        raise GraphQLError(
            f"'first' must be between 0 and {max_page_size}.",
            extensions={"code": "BAD_USER_INPUT"},
        )
    return first


_ENTRY_PREFIX = "e1:"


def encode_entry_cursor(entry: Entry) -> str:
    """Return the opaque cursor of a feed or post-list entry: (score µs, post id)."""
    raw = f"{_ENTRY_PREFIX}{entry.score}:{entry.post_id.hex}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_entry_cursor(cursor: str) -> Entry:
    """Inverse of :func:`encode_entry_cursor`; a BAD_USER_INPUT GraphQLError if malformed."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        if not raw.startswith(_ENTRY_PREFIX):
            raise ValueError(raw)
        score, pk = raw[len(_ENTRY_PREFIX) :].split(":", 1)
        value = int(score)
        if not 0 < value < 2**53:
            raise ValueError(score)
        return Entry(value, uuid.UUID(hex=pk))
    except (ValueError, UnicodeError, binascii.Error):
        raise GraphQLError(
            "The 'after' cursor is not valid.", extensions={"code": "BAD_USER_INPUT"}
        ) from None


def page_info(cursors: list[str], has_next: bool, after: str | None) -> relay.PageInfo:
    """Relay ``PageInfo`` of a forward page whose edges carry ``cursors`` (in order)."""
    return relay.PageInfo(
        has_next_page=has_next,
        has_previous_page=after is not None,
        start_cursor=cursors[0] if cursors else None,
        end_cursor=cursors[-1] if cursors else None,
    )
