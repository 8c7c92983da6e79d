"""Prometheus metrics of the domain (prometheus_client; exposed by the API's /metrics
and the worker's metrics port)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

FEED_FALLBACKS = Counter(
    "roost_feed_postgres_fallbacks_total",
    "Home-feed pages served from PostgreSQL because Redis failed.",
)
FEED_REBUILDS = Counter(
    "roost_feed_rebuilds_total",
    "Timelines rebuilt from PostgreSQL because their key was missing.",
    ["family"],
)
FANOUT_LAG = Histogram(
    "roost_fanout_lag_seconds",
    "Seconds from a post's commit to the last follower page written.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
FANOUT_FEEDS = Counter("roost_fanout_feeds_written_total", "Follower feeds written by fan-out.")
DEAD_LETTERS = Counter(
    "roost_dead_letters_total", "Outbox events whose consumer failed every attempt.", ["topic"]
)
OUTBOX_BACKLOG = Gauge(
    "roost_outbox_backlog", "Outbox events not yet dispatched (read at scrape time)."
)
DEAD_LETTERS_OPEN = Gauge(
    "roost_dead_letters_open", "Dead letters not yet replayed (read at scrape time)."
)
REALTIME_SUBSCRIPTIONS = Gauge(
    "roost_realtime_subscriptions", "Open GraphQL subscriptions of this process (read at scrape)."
)
REALTIME_CHANNELS = Gauge(
    "roost_realtime_channels", "Redis pub/sub channels this process subscribes (read at scrape)."
)
REALTIME_DROPPED = Counter(
    "roost_realtime_dropped_events_total",
    "Events dropped because a subscriber's queue was full (a slow client).",
)
