"""Connection arguments and the one opaque cursor codec (Relay Cursor Connections spec).

Every keyset connection (a user's posts, the home feed, hashtags, followers and
following, follow requests, blocked and muted accounts, likes, comments and replies,
notifications, the moderation queue) pages on the same position, ``(time, id)``
(:data:`domain.keyset.Position`), and writes it in the same cursor, which names the
list it belongs to: ``c2:<list>:<microseconds since the epoch>:<id as 32 hex digits>``,
URL-safe base64 without padding; ``<list>`` is 8 hex digits of BLAKE2b of the list's
kind and owner (``posts`` of a user, ``feed`` of a viewer, ``comments`` of a post, ...:
:data:`ListOf`), so a cursor of another list (or of another user's) is BAD_USER_INPUT.
Cursors of the formats that came before (``c1:`` microseconds ``:`` id, ``k1:`` ISO
time ``|`` id, the post lists' ``e1:``) name no list and still decode, so a client's
cursor survives an upgrade. Ranked lists (search, suggestions, the ranked feed) page on a
place in a frozen ranking instead; their cursors use :func:`pack` and :func:`unpack`
with a prefix of their own, so no cursor is ever read as another kind.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import hashlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.feed.timelines import score_of, time_of
from domain.keyset import Position

DEFAULT_PAGE_SIZE = 20
_PREFIX = "c2:"
#: A keyset list: its kind (``posts``, ``feed``, ``followers``, ...) and its owner (the
#: user, post, comment, hashtag or status whose list it is).
ListOf = tuple[str, object]
OTHER_LIST = "The 'after' cursor belongs to another list."
#: The range of the timestamps a keyset cursor may hold (UTC): row timestamps are
#: UUIDv7-era; anything else (a naive time, another offset, year 1 or 9999 pushed out
#: of range by an offset) is a cursor the server never issued.
CURSOR_MIN = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
CURSOR_MAX = dt.datetime(9999, 12, 30, tzinfo=dt.UTC)
#: Microseconds below 2^53: exact as a double, the timeline's score (year 2255).
_MAX_MICROS = 2**53


def pack(raw: str) -> str:
    """Return ``raw`` (ASCII, starting with its format's prefix) as an opaque cursor."""
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def unpack(cursor: str, *prefixes: str) -> tuple[str, str]:
    """Return ``(prefix, rest)`` of a cursor made by :func:`pack` whose text starts with
    one of ``prefixes``. Raises ValueError for anything else (not base64, not UTF-8,
    another prefix)."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
    except (UnicodeError, binascii.Error) as exc:
        raise ValueError(cursor) from exc
    for prefix in prefixes:
        if raw.startswith(prefix):
            return prefix, raw[len(prefix) :]
    raise ValueError(raw)


def bad_cursor(message: str = "The 'after' cursor is not valid.") -> GraphQLError:
    """The BAD_USER_INPUT error of a cursor the server never issued (or not here)."""
    return GraphQLError(message, extensions={"code": "BAD_USER_INPUT"})


def list_tag(of: ListOf) -> str:
    """The 8 hex digits naming the list ``of`` in its cursors."""
    kind, owner = of
    return hashlib.blake2b(f"{kind}:{owner}".encode(), digest_size=4).hexdigest()


def encode_cursor(position: Position, of: ListOf) -> str:
    """Return the opaque cursor of a keyset position ``(time, id)`` in the list ``of``;
    ``time`` must be aware (any offset: the cursor holds the instant)."""
    return cursor_encoder(of)(position)


def cursor_encoder(of: ListOf) -> Callable[[Position], str]:
    """:func:`encode_cursor` in the list ``of`` (its tag made once, for a page's cursors)."""
    head = f"{_PREFIX}{list_tag(of)}:"

    def encode(position: Position) -> str:
        at, pk = position
        return pack(f"{head}{score_of(at)}:{pk.hex}")

    return encode


def decode_cursor(cursor: str, of: ListOf, arg: str = "after") -> Position:
    """Return the keyset position inside a cursor of the list ``of`` (its time in UTC);
    raise a BAD_USER_INPUT GraphQLError if it names another list, is malformed or holds
    what :func:`encode_cursor` never issues (a time that is naive, not UTC, or outside
    ``CURSOR_MIN`` .. ``CURSOR_MAX``; microseconds outside 1 .. 2^53)."""
    try:
        prefix, rest = unpack(cursor, _PREFIX, "c1:", "e1:", "k1:")
        if prefix == _PREFIX:
            tag, rest = rest.split(":", 1)
            if tag != list_tag(of):
                raise bad_cursor(OTHER_LIST.replace("'after'", f"'{arg}'"))
        if prefix == "k1:":  # before the one codec: ISO time | id
            ts, pk = rest.split("|", 1)
            at = dt.datetime.fromisoformat(ts)
            if at.utcoffset() != dt.timedelta(0) or not CURSOR_MIN <= at <= CURSOR_MAX:
                raise ValueError(ts)
            return at, uuid.UUID(pk)
        micros, pk = rest.split(":", 1)
        value = int(micros)
        if not 0 < value < _MAX_MICROS or len(pk) != 32 or micros != str(value):
            raise ValueError(micros)
        return time_of(value), uuid.UUID(hex=pk)
    except ValueError:
        raise bad_cursor(f"The '{arg}' cursor is not valid.") from None


def check_first(first: int | None, max_page_size: int, default: int = DEFAULT_PAGE_SIZE) -> int:
    """The page size ``first`` asks for (null: ``default``); BAD_USER_INPUT outside
    0 .. ``max_page_size``."""
    size = default if first is None else first
    if size < 0 or size > max_page_size:
        raise GraphQLError(
            f"'first' must be between 0 and {max_page_size}.",
            extensions={"code": "BAD_USER_INPUT"},
        )
    return size


#: The descriptions of the backward paging arguments.
LAST = (
    "Page backward: the `last` entries just before `before` (the last ones of the list "
    "without it), in the list's order; `hasPreviousPage` says, exactly, whether more "
    "come before them. Null with `before`: as many as `first`."
)
BEFORE = "A cursor of this list: page backward from it (see `last`)."


@dataclass(frozen=True, slots=True)
class Window:
    """What a keyset connection's arguments ask for: ``size`` entries past ``position``
    (None: from the start), or, ``backward``, the ``size`` entries just before it (None:
    the last ones of the list); ``before``/``after`` are the cursors as given."""

    size: int
    position: Position | None
    backward: bool
    after: str | None
    before: str | None


def check_window(
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    max_page_size: int,
    of: ListOf,
    default: int = DEFAULT_PAGE_SIZE,
) -> Window:
    """Check the Relay arguments of the keyset connection ``of``: forward (``first``,
    ``after``) unless ``last`` or ``before`` is given, then backward (``last``, its
    null meaning ``first``, before ``before``; ``first`` is then ignored); a null size
    is ``default``. Raises BAD_USER_INPUT for a size outside 0 .. ``max_page_size``, a
    cursor not of this list, or ``after`` together with ``before``/``last``."""
    size, backward = check_direction(first, after, last, before, max_page_size, default)
    if not backward:
        return Window(size, _decoded(after, of), False, after, None)
    position = decode_cursor(before, of, "before") if before else None
    return Window(size, position, True, None, before)


def check_direction(
    first: int | None,
    after: str | None,
    last: int | None,
    before: str | None,
    max_page_size: int,
    default: int = DEFAULT_PAGE_SIZE,
) -> tuple[int, bool]:
    """``(size, backward)`` of a connection's Relay arguments, as :func:`check_window`
    reads them (its cursors left to the caller); BAD_USER_INPUT as there."""
    first = default if first is None else first
    if last is None and before is None:
        return check_first(first, max_page_size), False
    if after is not None:
        raise GraphQLError(
            "Page forward ('first', 'after') or backward ('last', 'before'), not both ways.",
            extensions={"code": "BAD_USER_INPUT"},
        )
    size = first if last is None else last
    if size < 0 or size > max_page_size:
        raise GraphQLError(
            f"'last' must be between 0 and {max_page_size}.",
            extensions={"code": "BAD_USER_INPUT"},
        )
    return size, True


def _decoded(cursor: str | None, of: ListOf) -> Position | None:
    return decode_cursor(cursor, of) if cursor else None


def window_info(cursors: list[str], more: bool, window: Window) -> relay.PageInfo:
    """Relay ``PageInfo`` of a page of ``window`` whose edges carry ``cursors`` (in
    order); ``more``: whether entries lie beyond the page in its walking direction
    (exact: ``hasNextPage`` forward, ``hasPreviousPage`` backward)."""
    if not window.backward:
        return page_info(cursors, more, window.after)
    return relay.PageInfo(
        has_next_page=window.before is not None,
        has_previous_page=more,
        start_cursor=cursors[0] if cursors else None,
        end_cursor=cursors[-1] if cursors else None,
    )


def page_info(cursors: list[str], has_next: bool, after: str | None) -> relay.PageInfo:
    """Relay ``PageInfo`` of a forward page whose edges carry ``cursors`` (in order)."""
    return relay.PageInfo(
        has_next_page=has_next,
        has_previous_page=after is not None,
        start_cursor=cursors[0] if cursors else None,
        end_cursor=cursors[-1] if cursors else None,
    )


@strawberry.enum(
    description="Why a list is closed to you: it comes back with no edges, "
    "`hasNextPage: false` and this reason, never as an empty page to fetch again."
)
class ListRestriction(Enum):
    PRIVATE_ACCOUNT = strawberry.enum_value(
        "private_account",
        description="The account is private and you neither are it nor follow it.",
    )
    BLOCKED = strawberry.enum_value(
        "blocked", description="A block stands between you and the account."
    )


#: The description of a connection's ``restricted`` field.
RESTRICTED = (
    "Null when you may read the list; else why not (the edges are then empty and "
    "`hasNextPage` false: nothing to page)."
)


def closed_page_info() -> relay.PageInfo:
    """The ``PageInfo`` of a list closed to the viewer: nothing before, nothing after."""
    return relay.PageInfo(
        has_next_page=False, has_previous_page=False, start_cursor=None, end_cursor=None
    )
