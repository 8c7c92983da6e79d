"""The feed's knobs (docs/seeds/feed-fan-out.md "The numbers we hold to")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.explore.config import ExploreConfig
from domain.explore.ports import Trending
from domain.feed.ports import Marks, RankedWindows, RankingSignals, Timelines
from domain.feed.pull_guesses import PullAuthorGuesses
from domain.feed.ranking import RankingConfig


@dataclass(frozen=True)
class FeedConfig:
    """Thresholds are follower counts; sizes are entries; durations are timedeltas."""

    pull_threshold: int = 10_000  # an author becomes pull at >= this many followers
    push_back_threshold: int = 8_000  # ... and push again under this many
    batch_size: int = 1_000  # followers per fan-out page (one Redis round trip each)
    max_len: int = 800  # entries kept per home feed
    ttl: dt.timedelta = dt.timedelta(days=30)  # feed keys expire after this idle time
    active_window: dt.timedelta = dt.timedelta(days=30)  # no push to followers idle longer
    ranking: RankingConfig = field(default_factory=RankingConfig)  # the ranked order
    explore: ExploreConfig = field(default_factory=ExploreConfig)  # explore and trending


@dataclass(frozen=True)
class FeedStores:
    """The feed's stores (:mod:`domain.feed.ports`): home feeds, authors' recent posts, ranking
    signals, ranked windows, trending posts and long jobs' saved places."""

    feeds: Timelines
    author_posts: Timelines
    signals: RankingSignals
    windows: RankedWindows
    marks: Marks
    trending: Trending
    #: Where rebuilds load from (None: the reader's engine); a lagging replica would lose posts.
    rebuild_engine: AsyncEngine | None = None
    #: This process's guesses of the pull authors each reader follows (domain.feed.read_feed).
    pull_guesses: PullAuthorGuesses = field(default_factory=PullAuthorGuesses)
