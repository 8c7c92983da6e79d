"""domain/feed/timelines/entries.py: an entry orders exactly like ``(created_at, id)`` in
PostgreSQL, so a Redis page and a SQL page agree on order and on cursors."""

from __future__ import annotations

import datetime as dt
import random
import uuid

from domain.db import new_id
from domain.feed.timelines.entries import Entry, score_of, time_of

BASE = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.UTC)


def test_score_is_microseconds_and_round_trips() -> None:
    ts = BASE + dt.timedelta(microseconds=123_457)
    assert score_of(ts) - score_of(BASE) == 123_457
    assert time_of(score_of(ts)) == ts
    assert time_of(float(score_of(ts))) == ts  # Redis hands scores back as doubles


def test_scores_of_this_century_are_exact_as_doubles() -> None:
    """Redis keeps scores as doubles: exact only up to 2**53 µs (year 2255)."""
    far = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
    assert score_of(far) < 2**53
    assert int(float(score_of(far) + 1)) == score_of(far) + 1


def test_entries_order_like_created_at_then_id_bytes() -> None:
    rng = random.Random(7)
    rows = [
        (
            BASE + dt.timedelta(microseconds=rng.choice([0, 1, 2])),
            uuid.UUID(int=rng.getrandbits(128)),
        )
        for _ in range(200)
    ]
    entries = [Entry.of(ts, pid) for ts, pid in rows]
    # PostgreSQL orders uuid by its 16 bytes (memcmp): the order of ``(created_at, id)``.
    by_sql = sorted(rows, key=lambda r: (r[0], r[1].bytes))
    assert [e.post_id for e in sorted(entries)] == [pid for _, pid in by_sql]


def test_ties_on_the_timestamp_break_on_the_post_id() -> None:
    first, second = sorted([new_id(), new_id()], key=lambda u: u.bytes)
    assert Entry.of(BASE, first) < Entry.of(BASE, second)
    assert Entry.of(BASE, second) < Entry.of(BASE + dt.timedelta(microseconds=1), first)


def test_the_member_is_the_post_ids_bytes() -> None:
    pid = new_id()
    assert Entry.of(BASE, pid).member == pid.bytes
