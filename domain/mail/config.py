"""The e-mail flows' knobs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

#: The actions REQUIRE_VERIFIED_EMAIL_FOR may name: the root mutations each one covers.
LIMITED_ACTIONS: dict[str, frozenset[str]] = {
    "post": frozenset({"createPost", "createMediaUpload"}),
    "comment": frozenset({"addComment"}),
    "follow": frozenset({"follow"}),
    "like": frozenset({"likePost"}),
}


@dataclass(frozen=True)
class MailConfig:
    """Token lifetimes, budgets, links and limits: link templates hold ``{token}`` (None: code
    alone); ``per_account_per_hour`` per kind; ``require_verified_for`` names
    :data:`LIMITED_ACTIONS`."""

    verification_ttl: dt.timedelta = dt.timedelta(hours=48)
    reset_ttl: dt.timedelta = dt.timedelta(minutes=60)
    per_account_per_hour: int = 3
    verification_link: str | None = None
    reset_link: str | None = None
    require_verified_for: frozenset[str] = field(default_factory=frozenset)

    def limited_mutations(self) -> frozenset[str]:
        """The root mutation fields that need a verified e-mail address."""
        return frozenset(f for a in self.require_verified_for for f in LIMITED_ACTIONS[a])
