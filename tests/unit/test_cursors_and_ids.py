"""Opaque cursors (schema/pagination.py), Relay global ids (schema/ids.py), the DateTime
scalar (schema/scalars.py) and pair lock keys (domain/social/pairs.py). Pure logic."""

from __future__ import annotations

import base64
import datetime as dt
import uuid

import pytest
from graphql import GraphQLError

from domain.errors import ValidationError
from domain.social.pairs import pair_lock_key
from schema.ids import decode_global_id, to_global_id
from schema.pagination import check_first, decode_cursor, encode_cursor, list_tag
from schema.scalars import parse_datetime, serialize_datetime


def b64(text: str) -> str:
    """Standard base64 of ``text`` (UTF-8), as a hand-made id or cursor would be."""
    return base64.b64encode(text.encode()).decode()


def urlsafe_b64(text: str) -> str:
    """URL-safe base64 of ``text`` without padding, the cursor encoding."""
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


# --- cursors ----------------------------------------------------------------------------

LIST = ("posts", uuid.UUID(int=7))


def test_cursor_round_trip_keeps_instant_and_microseconds():
    pk = uuid.uuid4()
    ts = dt.datetime(2026, 11, 29, 23, 17, 1, 123456, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    cursor = encode_cursor((ts, pk), LIST)
    got_ts, got_pk = decode_cursor(cursor, LIST)
    assert got_pk == pk
    assert got_ts == ts and got_ts.utcoffset() == dt.timedelta(0)
    assert got_ts.microsecond == 123456


def test_cursor_is_url_safe_and_unpadded():
    for _ in range(20):
        cursor = encode_cursor((dt.datetime.now(dt.UTC), uuid.uuid4()), LIST)
        assert "=" not in cursor and "+" not in cursor and "/" not in cursor
        assert cursor.isascii()


def test_cursors_order_positions_distinctly():
    ts = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    a, b = uuid.uuid4(), uuid.uuid4()
    # equal timestamps: ids break ties
    assert encode_cursor((ts, a), LIST) != encode_cursor((ts, b), LIST)


@pytest.mark.parametrize(
    "cursor",
    [
        "",
        "garbage",
        "!!!!",
        "é",
        "\x00",
        urlsafe_b64("k1:"),
        urlsafe_b64(f"k2:2026-01-01T00:00:00+00:00|{uuid.uuid4()}"),  # unknown version
        urlsafe_b64(f"2026-01-01T00:00:00+00:00|{uuid.uuid4()}"),  # no prefix
        urlsafe_b64("k1:2026-01-01T00:00:00+00:00"),  # no id
        urlsafe_b64("k1:2026-01-01T00:00:00+00:00|not-a-uuid"),
        urlsafe_b64(f"k1:yesterday|{uuid.uuid4()}"),
        urlsafe_b64(f"k1:2026-13-01T00:00:00+00:00|{uuid.uuid4()}"),
        base64.urlsafe_b64encode(b"k1:\xff\xfe|x").decode(),  # not UTF-8
    ],
)
def test_bad_cursor_is_bad_user_input(cursor):
    with pytest.raises(GraphQLError) as info:
        decode_cursor(cursor, LIST)
    assert info.value.extensions == {"code": "BAD_USER_INPUT"}


def test_check_first_bounds():
    assert check_first(0, 100) == 0
    assert check_first(100, 100) == 100
    for bad in (-1, 101, 10**9):
        with pytest.raises(GraphQLError) as info:
            check_first(bad, 100)
        assert info.value.extensions == {"code": "BAD_USER_INPUT"}


# --- global ids -------------------------------------------------------------------------


def test_global_id_round_trip():
    pk = uuid.uuid4()
    gid = to_global_id("User", pk)
    assert base64.b64decode(gid).decode() == f"User:{pk}"
    assert decode_global_id(gid, "User", "userId") == pk


@pytest.mark.parametrize(
    "value",
    [
        "",
        "garbage",
        "\x00",
        b64("User:\x00"),
        b64(f"Post:{uuid.uuid4()}"),  # another type
        b64(f"user:{uuid.uuid4()}"),  # type names are case-sensitive
        b64("User:not-a-uuid"),
        b64("User:"),
        b64(f"{uuid.uuid4()}"),  # no type prefix
        b64(f"User:{uuid.uuid4()}x"),
        str(uuid.uuid4()),  # a raw UUID is not a global id
    ],
)
def test_decode_global_id_refuses(value):
    with pytest.raises(ValidationError) as info:
        decode_global_id(value, "User", "userId")
    assert info.value.field == "userId"
    assert "userId" in info.value.message


# --- DateTime scalar --------------------------------------------------------------------


def test_serialize_datetime_is_utc_with_microseconds_and_z():
    plus2 = dt.timezone(dt.timedelta(hours=2))
    assert (
        serialize_datetime(dt.datetime(2026, 11, 29, 22, 17, 1, tzinfo=dt.UTC))
        == "2026-11-29T22:17:01.000000Z"
    )
    assert (
        serialize_datetime(dt.datetime(2026, 11, 30, 0, 17, 1, 5, tzinfo=plus2))
        == "2026-11-29T22:17:01.000005Z"
    )
    # A naive value is taken as UTC, never as local time.
    assert serialize_datetime(dt.datetime(2026, 1, 1)) == "2026-01-01T00:00:00.000000Z"


def test_parse_datetime_round_trip():
    value = dt.datetime(2026, 11, 29, 22, 17, 1, 654321, tzinfo=dt.UTC)
    assert parse_datetime(serialize_datetime(value)) == value
    assert parse_datetime("2026-01-01T00:00:00").tzinfo is not None
    assert parse_datetime("2026-01-01T01:00:00+01:00") == dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


# --- pair lock keys ---------------------------------------------------------------------


def test_pair_lock_key_is_symmetric_deterministic_and_signed_64_bit():
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    assert pair_lock_key(a, b) == pair_lock_key(b, a)
    assert pair_lock_key(a, b) == pair_lock_key(uuid.UUID(str(a)), uuid.UUID(str(b)))
    assert len({pair_lock_key(a, b), pair_lock_key(a, c), pair_lock_key(b, c)}) == 3
    keys = [pair_lock_key(uuid.uuid4(), uuid.uuid4()) for _ in range(500)]
    assert all(-(2**63) <= k < 2**63 for k in keys)
    assert any(k < 0 for k in keys) and any(k > 0 for k in keys)  # the full signed range


def test_one_cursor_format_for_every_keyset_list():
    """Posts (and the home feed's entries) and every other (time, id) list share one
    format: c2:<list>:<microseconds>:<id hex>; a cursor decodes in its own list only."""
    pk = uuid.uuid4()
    ts = dt.datetime(2026, 11, 29, 23, 17, 1, 123456, tzinfo=dt.UTC)
    cursor = encode_cursor((ts, pk), LIST)
    micros = (ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    assert base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode() == (
        f"c2:{list_tag(LIST)}:{micros}:{pk.hex}"
    )
    assert decode_cursor(cursor, LIST) == (ts, pk)
    for other in (("posts", uuid.UUID(int=8)), ("following", LIST[1]), ("feed", LIST[1])):
        with pytest.raises(GraphQLError) as info:
            decode_cursor(cursor, other)
        assert info.value.extensions == {"code": "BAD_USER_INPUT"}
        assert "another list" in info.value.message


def test_cursors_issued_before_the_one_format_still_decode():
    pk = uuid.uuid4()
    ts = dt.datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=dt.UTC)
    micros = (ts - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    assert decode_cursor(urlsafe_b64(f"k1:{ts.isoformat()}|{pk}"), LIST) == (ts, pk)
    assert decode_cursor(urlsafe_b64(f"e1:{micros}:{pk.hex}"), LIST) == (ts, pk)
    assert decode_cursor(urlsafe_b64(f"c1:{micros}:{pk.hex}"), LIST) == (ts, pk)


@pytest.mark.parametrize(
    "raw",
    [
        f"c1:0:{uuid.uuid4().hex}",  # the epoch itself: no row is that old
        f"c1:-5:{uuid.uuid4().hex}",
        f"c1:{2**53}:{uuid.uuid4().hex}",  # past the exact range of a timeline score
        f"c1:+5:{uuid.uuid4().hex}",  # not the canonical number
        f"c1:0005:{uuid.uuid4().hex}",
        f"c1:5:{uuid.uuid4()}",  # the id with hyphens: never issued
        "c1:5",
        f"c2:{list_tag(LIST)}:5:{uuid.uuid4()}",
        f"c2:{list_tag(LIST)}:0:{uuid.uuid4().hex}",
        f"c2:5:{uuid.uuid4().hex}",  # no list
        f"rs1:-:1:40:3:{uuid.uuid4().hex}",  # a search cursor
        f"f1:t:5:{uuid.uuid4().hex}",  # a ranked feed cursor
    ],
)
def test_cursors_of_other_kinds_or_out_of_range_are_bad_user_input(raw):
    with pytest.raises(GraphQLError) as info:
        decode_cursor(urlsafe_b64(raw), LIST)
    assert info.value.extensions == {"code": "BAD_USER_INPUT"}
