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
#: The range of the timestamps a keyset cursor may hold (UTC): row timestamps are
#: UUIDv7-era; anything else (a naive time, another offset, year 1 or 9999 pushed out
#: of range by an offset) is a cursor the server never issued.
CURSOR_MIN = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
CURSOR_MAX = dt.datetime(9999, 12, 30, tzinfo=dt.UTC)


def encode_cursor(position: Position) -> str:
    """Return the opaque cursor of a keyset position (timestamp, id)."""
    ts, pk = position
    raw = f"{_PREFIX}{ts.astimezone(dt.UTC).isoformat(timespec='microseconds')}|{pk}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> Position:
    """Return the position inside a cursor; raise a BAD_USER_INPUT GraphQLError if it is
    malformed or holds what :func:`encode_cursor` never issues (a time that is naive, not
    UTC, or outside ``CURSOR_MIN`` .. ``CURSOR_MAX``)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        if not raw.startswith(_PREFIX):
            raise ValueError(raw)
        ts, pk = raw[len(_PREFIX) :].split("|", 1)
        at = dt.datetime.fromisoformat(ts)
        # Only what encode_cursor issues: UTC, within the range timestamps can hold.
        if at.utcoffset() != dt.timedelta(0) or not CURSOR_MIN <= at <= CURSOR_MAX:
            raise ValueError(ts)
        return at, uuid.UUID(pk)
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
