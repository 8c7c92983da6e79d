"""Push or pull: the hysteresis of docs/seeds/feed-fan-out.md "Why push stops at 10,000"."""

from __future__ import annotations

from typing import Literal

Mode = Literal["push", "pull"]


def next_mode(current: Mode, followers: int, *, pull_at: int, push_under: int) -> Mode:
    """Return the author's mode for the post being fanned out now.

    A push author becomes pull at ``followers >= pull_at``; a pull author becomes push
    again only at ``followers < push_under`` (``push_under <= pull_at``), so an author
    hovering at the line does not flip on every post.
    """
    if current == "push":
        return "pull" if followers >= pull_at else "push"
    return "push" if followers < push_under else "pull"
