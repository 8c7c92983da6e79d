"""Push or pull: the hysteresis of docs/seeds/feed-fan-out.md "Why push stops at 10,000"."""

from __future__ import annotations

from typing import Literal

Mode = Literal["push", "pull"]


def next_mode(current: Mode, followers: int, *, pull_at: int, push_under: int) -> Mode:
    """Pull at ``followers >= pull_at``; push again only under ``push_under``."""
    if current == "push":
        return "pull" if followers >= pull_at else "push"
    return "push" if followers < push_under else "pull"
