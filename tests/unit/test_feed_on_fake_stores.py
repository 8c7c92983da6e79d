"""The home feed's read and the ranked feed's pages against fakes of the feed ports
(tests/support/fakes.py) and a PostgreSQL that holds nothing (EmptyDatabase as the
RoundTrip port): the cached feed served in order with exact has_next, the fall back to
PostgreSQL when the feed store fails, a frozen ranked window sliced past the posts the
viewer may not see and continued chronologically from its tail, and a window that is
gone or unreadable as expired. The same logic on Redis and PostgreSQL is in
tests/integration/test_feed*.py and test_ranked_feed.py."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence

import pytest
from sqlalchemy.ext.asyncio import create_async_engine

from domain import reads
from domain.feed.config import FeedConfig
from domain.feed.ports import Window
from domain.feed.read_feed import read_home_feed
from domain.feed.read_ranked_feed import Position, RankedWindowExpiredError, read_ranked_feed
from domain.feed.timelines import Entry
from tests.support.fakes import EmptyDatabase, FakeRankedWindows, FakeTimelines, fake_feed_stores

BASE = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)
VIEWER = uuid.UUID(int=10**6)
CONFIG = FeedConfig()


def entries(n: int) -> list[Entry]:
    """``n`` posts, one a second; post id ``i + 1`` is the i-th oldest."""
    return [Entry.of(BASE + dt.timedelta(seconds=i), uuid.UUID(int=i + 1)) for i in range(n)]


def hiding(ids: set[int]):
    async def visible(batch: Sequence[Entry]) -> list[bool]:
        return [e.post_id.int not in ids for e in batch]

    return visible


@pytest.fixture
def database() -> Iterator[EmptyDatabase]:
    db = EmptyDatabase()
    before = reads._round_trip
    reads.use_round_trip(db)
    try:
        yield db
    finally:
        reads._round_trip = before


@pytest.fixture
def engine():
    """Never connected: every read of these tests goes through the RoundTrip port."""
    return create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none")


async def test_the_cached_feed_is_served_newest_first_and_past_its_window_from_postgresql(
    database, engine
):
    stores = fake_feed_stores(CONFIG)
    assert isinstance(stores.feeds, FakeTimelines)
    stores.feeds.put(VIEWER, entries(30))
    page = await read_home_feed(
        engine, stores, CONFIG, VIEWER, first=5, before=None, visible=hiding({30, 28, 27})
    )
    assert page.source == "redis"
    assert [e.post_id.int for e in page.entries] == [29, 26, 25, 24, 23]
    assert page.has_next
    after = await read_home_feed(
        engine, stores, CONFIG, VIEWER, first=25, before=page.entries[-1], visible=hiding(set())
    )
    # 22 cached entries are older: fewer than asked, so the cached window ends inside
    # this page and the whole page is PostgreSQL's (which holds nothing here), never a
    # short page cut at the window's edge.
    assert after.entries == [] and not after.has_next
    assert len(database.statements) == 3  # the pull authors twice, then the home feed's SQL
    assert "follows" in database.statements[-1]


async def test_a_failing_feed_store_serves_the_page_from_postgresql(database, engine):
    stores = fake_feed_stores(CONFIG)
    assert isinstance(stores.feeds, FakeTimelines)
    stores.feeds.put(VIEWER, entries(30))
    stores.feeds.failing = True
    page = await read_home_feed(
        engine, stores, CONFIG, VIEWER, first=5, before=None, visible=hiding(set())
    )
    assert page.source == "postgres"
    assert page.entries == [] and not page.has_next  # what PostgreSQL holds: nothing here
    assert any("follows" in sql for sql in database.statements)


async def test_a_frozen_window_is_sliced_then_continued_from_its_tail(database, engine):
    stores = fake_feed_stores(CONFIG)
    feed, windows = stores.feeds, stores.windows
    assert isinstance(feed, FakeTimelines) and isinstance(windows, FakeRankedWindows)
    older = entries(20)
    feed.put(VIEWER, older)
    ranked = [older[i] for i in (15, 19, 17, 18, 16)]  # the ranked order of the newest five
    await windows.save(VIEWER, "w1", Window(ranked, older[15]))

    async def page(after: Position, first: int, hide: set[int]):
        return await read_ranked_feed(
            engine,
            stores,
            CONFIG,
            VIEWER,
            first=first,
            after=after,
            visible=hiding(hide),
            now=BASE,
        )

    first = await page(Position("w1", 0, Entry(0, uuid.UUID(int=0))), 3, {20})
    assert [e.post_id.int for e, _ in first.items] == [16, 18, 19]
    assert first.has_next
    last_pos = first.items[-1][1]
    assert (last_pos.window_id, last_pos.offset) == ("w1", 4)
    rest = await page(last_pos, 4, set())
    # The window's last post, then the chronological feed older than the tail (16).
    assert [e.post_id.int for e, _ in rest.items] == [17, 15, 14, 13]
    assert [p.window_id for _, p in rest.items] == ["w1", None, None, None]
    assert rest.has_next


async def test_a_window_gone_or_unreadable_is_expired(database, engine):
    stores = fake_feed_stores(CONFIG)
    windows = stores.windows
    assert isinstance(windows, FakeRankedWindows)
    await windows.save(VIEWER, "w1", Window(entries(3), None))
    at = Position("w1", 1, Entry(0, uuid.UUID(int=0)))
    for viewer in (uuid.uuid4(),):  # another viewer's cursor finds nothing
        with pytest.raises(RankedWindowExpiredError):
            await read_ranked_feed(
                engine, stores, CONFIG, viewer, first=2, after=at, visible=hiding(set()), now=BASE
            )
    windows.failing = True  # the store fails: as good as gone, never a 500
    with pytest.raises(RankedWindowExpiredError):
        await read_ranked_feed(
            engine, stores, CONFIG, VIEWER, first=2, after=at, visible=hiding(set()), now=BASE
        )
    windows.failing = False
    page = await read_ranked_feed(
        engine, stores, CONFIG, VIEWER, first=2, after=at, visible=hiding(set()), now=BASE
    )
    assert [e.post_id.int for e, _ in page.items] == [2, 3] and not page.has_next
