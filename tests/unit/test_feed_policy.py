"""domain/feed/policy.py: push or pull, with hysteresis (docs/seeds/feed-fan-out.md "Why
push stops at 10,000 followers"): 10,000 and 8,000 are the production thresholds."""

from __future__ import annotations

import pytest

from domain.feed.policy import next_mode

PULL_AT, PUSH_UNDER = 10_000, 8_000


@pytest.mark.parametrize(
    ("current", "followers", "expected"),
    [
        ("push", 0, "push"),
        ("push", 9_999, "push"),
        ("push", 10_000, "pull"),  # the line itself pulls
        ("push", 250_000, "pull"),
        ("pull", 10_000, "pull"),
        ("pull", 8_000, "pull"),  # between the lines a pull author stays pull
        ("pull", 7_999, "push"),
        ("pull", 0, "push"),
    ],
)
def test_thresholds(current, followers, expected) -> None:
    assert next_mode(current, followers, pull_at=PULL_AT, push_under=PUSH_UNDER) == expected


def test_an_author_hovering_between_the_lines_never_flips() -> None:
    mode = "push"
    modes = []
    for followers in [9_000, 10_000, 9_500, 8_500, 9_999, 8_000, 9_000]:
        mode = next_mode(mode, followers, pull_at=PULL_AT, push_under=PUSH_UNDER)
        modes.append(mode)
    assert modes == ["push", "pull", "pull", "pull", "pull", "pull", "pull"]


def test_without_a_gap_the_policy_is_a_plain_threshold() -> None:
    for followers in range(95, 106):
        expected = "pull" if followers >= 100 else "push"
        for current in ("push", "pull"):
            assert next_mode(current, followers, pull_at=100, push_under=100) == expected
