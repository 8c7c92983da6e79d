"""The hybrid home feed (docs/seeds/feed-fan-out.md; docs/design.md "Home feed"): push authors
fanned out on write, pull authors merged at read."""
