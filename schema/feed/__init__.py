"""The home feed: ``viewer { feed(first, after, order) }``, newest first (RECENT) or
ranked (RANKED)."""
