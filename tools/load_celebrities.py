"""Synthetic celebrity accounts on a loaded graph (``roost load-graph --celebrities``).

The real Slashdot graph tops out at 2,552 followers, below the feed's pull threshold
(10,000; docs/design.md "Home feed"). This adds accounts that cross it: by default
``celeb10k`` (10,000 followers) and ``celeb50k`` (50,000), each followed by a
deterministic random sample of the existing active users, with a few posts each.

Everything is one transaction: the account rows, the follows (``COPY``, source
``import``), the followers / following / posts counters (added to shard 0, exactly
what was inserted) and the posts with their hashtags and ``post.created`` outbox
rows, so the worker fans the posts out (and decides push or pull from the new
follower count) as it would for any post. An account whose username already exists is left alone: a
second run changes nothing.
"""

from __future__ import annotations

import datetime as dt
import random
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from adapters.postgres.driver import asyncpg_connection
from domain.db import new_id, utcnow
from domain.engagement.hashtags import tag_post
from domain.errors import ValidationError
from domain.outbox.dispatch import Dispatcher
from domain.outbox.events import PostCreated
from domain.outbox.unit_of_work import unit_of_work
from domain.text import normalize_username
from domain.visibility.predicates import is_active

#: (username, followers) of the accounts ``roost load-graph --celebrities`` adds.
CELEBRITIES: tuple[tuple[str, int], ...] = (("celeb10k", 10_000), ("celeb50k", 50_000))
#: Celebrity accounts are dated this long before the load; their follows fall in between.
ACCOUNT_AGE = dt.timedelta(days=90)
#: Captions of their posts (the first ``posts_each``), newest last.
CAPTIONS = (
    "Hello Roost! Thanks for the follows. #hello",
    "Behind the scenes today. #backstage",
    "New project announcement coming soon… #news",
    "What should I post about next? Reply below.",
    "Throwback to the early days. #tbt",
)


@dataclass(frozen=True)
class CelebrityResult:
    """One account: created by this run, or already present (then nothing was added)."""

    username: str
    user_id: uuid.UUID
    created: bool
    followers_added: int
    posts_added: int


@dataclass(frozen=True)
class CelebrityReport:
    """What one :func:`load_celebrities` run did; ``seconds`` is wall-clock time."""

    accounts: tuple[CelebrityResult, ...]
    seconds: float

    def summary(self) -> str:
        """One line per account: added (with followers and posts) or already present."""
        lines = []
        for a in self.accounts:
            if a.created:
                lines.append(
                    f"  added {a.username}: {a.followers_added:,} followers,"
                    f" {a.posts_added} posts (id {a.user_id})"
                )
            else:
                lines.append(f"  {a.username} already present: unchanged (id {a.user_id})")
        return "\n".join([f"Celebrities in {self.seconds:.1f} s:", *lines])


_SAMPLE = f"""
    SELECT id FROM users
    WHERE {is_active()} AND NOT (username = ANY(CAST(:exclude AS text[])))
      {{restrict}}
    ORDER BY md5(CAST(:seed AS text) || username), id
    LIMIT :n
"""

_ADD_FOLLOW_COUNTS = text(
    """
    INSERT INTO counter_shards (entity_id, kind, shard, value)
    SELECT e, k, 0, n
    FROM unnest(CAST(:entities AS uuid[]), CAST(:kinds AS text[]), CAST(:amounts AS bigint[]))
         AS t(e, k, n)
    ORDER BY e, k
    ON CONFLICT (entity_id, kind, shard)
    DO UPDATE SET value = counter_shards.value + EXCLUDED.value
    """
)


async def load_celebrities(
    engine: AsyncEngine,
    *,
    password_hash: str,
    accounts: Sequence[tuple[str, int]] = CELEBRITIES,
    posts_each: int = 3,
    rng_seed: int = 2494,
    candidates: Sequence[uuid.UUID] | None = None,
    dispatcher: Dispatcher | None = None,
    now: dt.datetime | None = None,
) -> CelebrityReport:
    """Add each ``(username, followers)`` account unless its username exists; return a
    CelebrityReport.

    - A new account: UUIDv7 id, display name ``Celebrity <username>``, status active,
      ``created_at = now - 90 days``, active now, ``password_hash`` (already hashed).
    - Followers: ``followers`` distinct active users (not celebrity accounts of
      ``accounts``), chosen by ``md5(rng_seed || username)`` order, so the same database
      gives the same sample; ``candidates`` restricts the pool to those user ids.
      Follows are dated uniformly between the account's creation and ``now``.
    - ``posts_each`` posts (at most 5), hours apart before ``now``, with their hashtags
      and a ``post.created`` outbox row each, dispatched with ``dispatcher`` after the
      commit when given (else the worker's relay picks them up).
    - Counters: ``followers`` of the account, ``following`` +1 of each follower, and
      ``posts``: all on shard 0, in the same transaction, so counts stay exact.

    One transaction for all accounts. Raises ValueError (a bad username, a negative
    follower count, ``posts_each`` outside 0..5, an empty ``password_hash``, or fewer
    eligible users than an account needs; nothing is written) and SQLAlchemy
    DBAPIError (the transaction rolls back).
    """
    if not password_hash:
        raise ValueError("password_hash must be a non-empty password hash")
    if not 0 <= posts_each <= len(CAPTIONS):
        raise ValueError(f"posts_each must be between 0 and {len(CAPTIONS)}")
    try:
        names = [normalize_username(name) for name, _ in accounts]
    except ValidationError as exc:
        raise ValueError(f"bad celebrity username: {exc}") from exc
    if any(n < 0 for _, n in accounts):
        raise ValueError("follower counts must be >= 0")
    started = time.perf_counter()
    now = now or utcnow()
    created_at = now - ACCOUNT_AGE
    rng = random.Random(rng_seed)
    results: list[CelebrityResult] = []
    restrict = "AND id = ANY(CAST(:candidates AS uuid[]))" if candidates is not None else ""
    async with unit_of_work(engine, dispatcher) as uow:
        conn = uow.conn
        await conn.execute(text("SET LOCAL synchronous_commit = off"))
        # Block and unblock wait for the load, so no follow lands beside a new block.
        await conn.execute(text("LOCK TABLE blocks IN SHARE MODE"))
        apg = await asyncpg_connection(conn)
        for name, (_, wanted) in zip(names, accounts, strict=True):
            existing = await conn.scalar(
                text("SELECT id FROM users WHERE username = :u"), {"u": name}
            )
            if existing is not None:
                results.append(CelebrityResult(name, existing, False, 0, 0))
                continue
            params: dict[str, object] = {"exclude": names, "seed": str(rng_seed), "n": wanted}
            if candidates is not None:
                params["candidates"] = list(candidates)
            sample = await conn.execute(text(_SAMPLE.format(restrict=restrict)), params)
            followers = list(sample.scalars())
            if len(followers) < wanted:
                raise ValueError(
                    f"{name} needs {wanted:,} followers but only {len(followers):,}"
                    " active users can follow it"
                )
            user_id = new_id()
            await conn.execute(
                text(
                    "INSERT INTO users (id, username, display_name, bio, password_hash,"
                    " status, created_at, last_active_at)"
                    " VALUES (:id, :u, :dn, :bio, :ph, 'active', :created, :now)"
                ),
                {
                    "id": user_id,
                    "u": name,
                    "dn": f"Celebrity {name}",
                    "bio": f"Synthetic account with {wanted:,} followers.",
                    "ph": password_hash,
                    "created": created_at,
                    "now": now,
                },
            )
            span = (now - created_at).total_seconds()
            records = [
                (
                    new_id(),
                    f,
                    user_id,
                    "import",
                    created_at + dt.timedelta(seconds=rng.random() * span),
                )
                for f in followers
            ]
            if records:
                await apg.copy_records_to_table(
                    "follows",
                    records=records,
                    columns=["id", "follower_id", "followee_id", "source", "created_at"],
                )
            posts = []
            for i in range(posts_each):
                post_id = new_id()
                at = now - dt.timedelta(hours=6 * (posts_each - i))
                await conn.execute(
                    text(
                        "INSERT INTO posts (id, author_id, caption, created_at)"
                        " VALUES (:id, :a, :c, :at)"
                    ),
                    {"id": post_id, "a": user_id, "c": CAPTIONS[i], "at": at},
                )
                await tag_post(conn, post_id, at, CAPTIONS[i])
                await uow.record(PostCreated(post_id, user_id))
                posts.append(post_id)
            counts = [(user_id, "followers", len(followers)), (user_id, "posts", len(posts))]
            counts += [(f, "following", 1) for f in followers]
            counts = [c for c in counts if c[2]]
            await conn.execute(
                _ADD_FOLLOW_COUNTS,
                {
                    "entities": [c[0] for c in counts],
                    "kinds": [c[1] for c in counts],
                    "amounts": [c[2] for c in counts],
                },
            )
            # People search's ranking signal, in step with the counter.
            await conn.execute(
                text("UPDATE user_search SET followers = followers + :n WHERE user_id = :u"),
                {"n": len(followers), "u": user_id},
            )
            results.append(CelebrityResult(name, user_id, True, len(followers), len(posts)))
    if any(r.created for r in results):
        async with engine.begin() as conn:
            await conn.execute(text("ANALYZE users, follows, counter_shards"))
    return CelebrityReport(tuple(results), time.perf_counter() - started)
