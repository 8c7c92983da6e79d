"""The ranked feed's score with a fixed clock (docs/architecture/home-feed.md "Home feed",
Ranked order), the frozen window's stored form and the ranked cursors."""

from __future__ import annotations

import datetime as dt
import math
import random
import uuid

import pytest
from graphql import GraphQLError

from adapters.feedstore.members import post_id_of
from adapters.feedstore.ranked_windows import decode_window, encode_window
from domain.db import new_id
from domain.feed.ports import Window
from domain.feed.ranking import (
    Candidate,
    RankingConfig,
    Signals,
    decayed_rate,
    decayed_rate_us,
    engagement,
    ms_of,
    preferred_kind,
    rank,
    recency,
    score,
    time_of_uuid7,
)
from domain.feed.read_ranked_feed import Position
from domain.feed.timelines import Entry
from domain.feed.timelines.entries import score_of
from schema.feed.ranked import decode_ranked_cursor, encode_ranked_cursor
from schema.pagination import encode_cursor

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)
CFG = RankingConfig()
VIEWER = uuid.UUID(int=1)
H = dt.timedelta(hours=1)
MICROSECOND = dt.timedelta(microseconds=1)


def post(age: dt.timedelta, author: uuid.UUID | None = None, kind: str = "text") -> Candidate:
    return Candidate(Entry.of(NOW - age, new_id()), author or uuid.uuid4(), kind)


def test_recency_halves_every_six_hours() -> None:
    assert recency(dt.timedelta(0), CFG.half_life) == 1.0
    assert recency(6 * H, CFG.half_life) == pytest.approx(0.5)
    assert recency(12 * H, CFG.half_life) == pytest.approx(0.25)
    assert recency(3 * H, CFG.half_life) == pytest.approx(1 / math.sqrt(2))
    assert recency(-H, CFG.half_life) == 1.0  # clock skew: never above a post of now
    assert score(post(6 * H), Signals(), VIEWER, NOW, CFG) == pytest.approx(0.5)


def test_engagement_is_velocity_against_the_authors_average() -> None:
    assert engagement(0, 5.0, 1.0) == 0.0
    # The last hour matches the author's average plus the prior: one half.
    assert engagement(3, 2.0, 1.0) == pytest.approx(0.5)
    # The same velocity means more from a quiet author than from a busy one.
    assert engagement(3, 0.0, 1.0) > engagement(3, 30.0, 1.0)
    assert engagement(10_000, 0.0, 1.0) < 1.0


def test_engagement_adds_its_weight_to_recency() -> None:
    author = uuid.uuid4()
    c = post(2 * H, author)
    quiet = Signals(velocity={c.entry.post_id: 3}, author_rate={author: 2.0})
    expected = recency(2 * H, CFG.half_life) + CFG.engagement_weight * 0.5
    assert score(c, quiet, VIEWER, NOW, CFG) == pytest.approx(expected)
    # A busy author's same three likes count for less.
    busy = Signals(velocity={c.entry.post_id: 3}, author_rate={author: 59.0})
    assert score(c, busy, VIEWER, NOW, CFG) < score(c, quiet, VIEWER, NOW, CFG)


def test_proximity_multiplies_by_one_and_a_half_except_for_the_viewer() -> None:
    friend = uuid.uuid4()
    c = post(H, friend)
    close = Signals(close_authors=frozenset({friend, VIEWER}))
    assert score(c, close, VIEWER, NOW, CFG) == pytest.approx(1.5 * recency(H, CFG.half_life))
    own = post(H, VIEWER)
    assert score(own, close, VIEWER, NOW, CFG) == pytest.approx(recency(H, CFG.half_life))


def test_a_liked_authors_older_post_outranks_a_strangers_newer_one() -> None:
    friend = uuid.uuid4()
    older = post(3 * H, friend)  # 0.71 x 1.5 = 1.06
    newer = post(dt.timedelta(minutes=1))  # ~1.0
    signals = Signals(close_authors=frozenset({friend}))
    assert rank([newer, older], signals, VIEWER, NOW, CFG) == [older, newer]
    assert rank([newer, older], Signals(), VIEWER, NOW, CFG) == [newer, older]
    # Past 3.5 hours (2 ** (-age/6) < 1/1.5) the boost no longer makes up for the age.
    oldest = post(4 * H, friend)
    assert rank([oldest, newer], signals, VIEWER, NOW, CFG) == [newer, oldest]


def test_preference_multiplies_by_one_point_two() -> None:
    video, image = post(H, kind="video"), post(H, kind="image")
    s = Signals(preferred="video")
    assert score(video, s, VIEWER, NOW, CFG) == pytest.approx(1.2 * recency(H, CFG.half_life))
    assert score(image, s, VIEWER, NOW, CFG) == pytest.approx(recency(H, CFG.half_life))


def test_all_multipliers_together() -> None:
    friend = uuid.uuid4()
    c = post(6 * H, friend, "video")
    s = Signals(
        velocity={c.entry.post_id: 1},
        author_rate={friend: 0.0},
        close_authors=frozenset({friend}),
        preferred="video",
    )
    assert score(c, s, VIEWER, NOW, CFG) == pytest.approx((0.5 + 0.5 * 0.5) * 1.5 * 1.2)


def test_equal_scores_order_newest_first() -> None:
    a, b = post(H), post(H)
    newest_first = sorted([a, b], key=lambda c: c.entry, reverse=True)
    assert rank([a, b], Signals(), VIEWER, NOW, CFG) == newest_first
    assert rank([b, a], Signals(), VIEWER, NOW, CFG) == newest_first
    # No signal at all: the chronological order.
    posts = [post(k * H) for k in (5, 0, 3, 1)]
    assert rank(posts, Signals(), VIEWER, NOW, CFG) == sorted(
        posts, key=lambda c: c.entry, reverse=True
    )


def test_a_preference_needs_a_majority_of_the_last_twenty() -> None:
    assert preferred_kind(["video"] * 11 + ["image"] * 9, CFG) == "video"
    assert preferred_kind(["video"] * 10 + ["image"] * 10, CFG) is None  # half is not most
    assert preferred_kind(["video"] * 4, CFG) is None  # too few interactions yet
    assert preferred_kind(["text"] * 20, CFG) is None  # text is no media kind
    # Only the last 20 count (the list is oldest first).
    assert preferred_kind(["video"] * 30 + ["image"] * 20, CFG) == "image"


def test_the_authors_average_rate_decays() -> None:
    horizon = CFG.author_rate_horizon
    assert decayed_rate(24.0, NOW, NOW, horizon) == pytest.approx(1.0)  # 24 over 24 h
    assert decayed_rate(24.0, NOW - horizon, NOW, horizon) == pytest.approx(math.exp(-1))
    assert decayed_rate(24.0, NOW + H, NOW, horizon) == pytest.approx(1.0)


def test_the_average_in_microseconds_is_the_same_float() -> None:
    """The signals read computes averages in µs (a hundred per window): exactly the
    float of the timedelta formula, so rankings do not move."""
    rng = random.Random(5)
    horizon = CFG.author_rate_horizon
    for _ in range(2000):
        count = rng.uniform(0, 500)
        at = NOW - dt.timedelta(milliseconds=rng.randint(-3_600_000, 10 * 86_400_000))
        now = NOW + dt.timedelta(microseconds=rng.randint(0, 999))
        elapsed = max((now - at) / horizon, 0.0)
        expected = count * math.exp(-elapsed) / (horizon / dt.timedelta(hours=1))
        got = decayed_rate_us(count, score_of(at), score_of(now), horizon // MICROSECOND)
        assert got == expected == decayed_rate(count, at, now, horizon)


def test_a_member_decodes_to_an_equal_uuid() -> None:
    for _ in range(100):
        value = uuid.uuid4()
        decoded = post_id_of(value.bytes)
        assert decoded == value and hash(decoded) == hash(value) and str(decoded) == str(value)
        assert isinstance(decoded, uuid.UUID)
    a, b = sorted(uuid.uuid4() for _ in range(2))
    assert post_id_of(a.bytes) < b and a < post_id_of(b.bytes)
    with pytest.raises(ValueError):
        post_id_of(b"")


def test_uuid7_time_and_milliseconds() -> None:
    before = dt.datetime.now(dt.UTC) - dt.timedelta(milliseconds=1)
    at = time_of_uuid7(new_id())
    assert before <= at <= dt.datetime.now(dt.UTC)
    assert ms_of(dt.datetime(1970, 1, 1, 0, 0, 1, tzinfo=dt.UTC)) == 1000


def test_a_window_round_trips() -> None:
    entries = [Entry.of(NOW - k * H, new_id()) for k in range(5)]
    w = Window(entries, entries[-1])
    assert decode_window(encode_window(w)) == w
    assert decode_window(encode_window(Window(entries, None))) == Window(entries, None)
    assert decode_window(b"") == Window([], None)


def test_ranked_cursors_round_trip_and_refuse_anything_else() -> None:
    e = Entry.of(NOW, new_id())
    for p in (Position("abcDEF_-12", 7, Entry(0, uuid.UUID(int=0))), Position(None, 0, e)):
        assert decode_ranked_cursor(encode_ranked_cursor(p)) == p
    for bad in (
        "",
        "nope",
        encode_cursor(e.position, ("feed", e.post_id)),
        "ZjE6dzp4OjA",
        "ZjE6dzp4Oi0x",
    ):
        with pytest.raises(GraphQLError) as err:
            decode_ranked_cursor(bad)
        assert err.value.extensions == {"code": "BAD_USER_INPUT"}
