"""What one seed did."""

from __future__ import annotations

from dataclasses import dataclass, field

from tools.seed_posts.generate import WINDOW


@dataclass(frozen=True)
class SeedReport:
    """What one :func:`seed_posts` run did. Times are wall-clock seconds."""

    posts: int  # posts created by this run (bulk + live)
    bulk_posts: int  # COPYed history (no outbox rows)
    live_posts: int  # published through create_post (outbox -> worker fan-out)
    authors: int  # distinct authors of this run's posts
    active_users: int  # users given a last_active_at within the window by this run
    population: int  # active users the posts were spread over
    skipped: bool  # posts already existed: nothing was written
    seconds: float
    timelines_dropped: int = 0  # cached feeds / author stores deleted (rebuilt on read)
    feeds_warmed: int = 0  # feeds rebuilt before the live posts, so fan-out has targets
    hashtag_links: int = 0  # post_hashtags rows of the bulk posts
    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase

    def summary(self) -> str:
        """A human, one- or two-line account of the run."""
        if self.skipped:
            return "Posts already exist: seeding skipped (nothing written)."
        if not self.posts:
            return "Nothing to seed (no posts asked for, or no active users)."
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items())
        return (
            f"Seeded {self.posts:,} posts ({self.bulk_posts:,} bulk, {self.live_posts:,} live)"
            f" by {self.authors:,} authors over {self.population:,} users;"
            f" {self.active_users:,} users active in the last {WINDOW.days} days;"
            f" {self.hashtag_links:,} hashtag links; {self.timelines_dropped:,} cached"
            " timelines dropped,"
            f" {self.feeds_warmed:,} feeds warmed; {self.seconds:.1f} s\n  ({phases})"
        )
