"""The hybrid home feed (docs/seeds/feed-fan-out.md; docs/design.md "Home feed").

Push authors' posts are fanned out on write into each active follower's Redis feed;
pull authors' posts are merged in at read time from their own recent-posts store.
"""
