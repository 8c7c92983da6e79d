"""Use case: hydrate a page of feed posts for one viewer in one statement (docs/design.md "Home
feed", Read); every fact is a key or partial-index probe, so cost does not grow with followees."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from domain.feed.sources import PULL_AUTHORS_SQL
from domain.identity.queries import UserRecord
from domain.posts.queries import PostRecord
from domain.reads import fetch_rows
from domain.visibility.predicates import is_active, is_live
from domain.visibility.rules import visible_count
from domain.visibility.sql import (
    BLOCK_PARTNERS,
    hidden_comments_sql,
    hidden_followers_sql,
    hidden_following_sql,
    hidden_likes_sql,
)


@dataclass(frozen=True, slots=True)
class Wanted:
    """Optional facts: ``user_counts`` (followers, following, posts), ``post_counts`` (likes,
    comments), ``viewer_liked``; ``feed_reader``: what a home-feed page checks of its reader,
    read in the same statement (:class:`Hydration`)."""

    user_counts: bool = False
    post_counts: bool = False
    viewer_liked: bool = False
    feed_reader: bool = False


@dataclass(frozen=True, slots=True)
class HydratedPost:
    """A post for one viewer: ``author`` (None if gone), ``blocked`` (either way), ``followed``,
    ``muted``; counts and ``liked`` None unless :class:`Wanted`."""

    post: PostRecord
    author: UserRecord | None
    blocked: bool
    followed: bool
    muted: bool
    author_counts: tuple[int, int, int] | None = None
    post_counts: tuple[int, int] | None = None
    liked: bool | None = None


def _counts(entity: str, alias: str, kinds: Sequence[str]) -> str:
    """A one-row LATERAL summing ``entity``'s counter shards per ``kind``."""
    sums = ", ".join(
        f"coalesce(sum(value) FILTER (WHERE kind = '{k}'), 0)::bigint AS {k}" for k in kinds
    )
    wanted = ", ".join(f"'{k}'" for k in kinds)
    return (
        f"LEFT JOIN LATERAL (SELECT {sums} FROM counter_shards"
        f" WHERE entity_id = {entity} AND kind IN ({wanted})) AS {alias} ON true"
    )


def _hidden(expr: str) -> str:
    """``expr`` (what the viewer's blocks hide) only when the viewer has block partners."""
    return f"CASE WHEN cardinality(hbp.ids) > 0 THEN {expr} ELSE 0 END"


def _statement(wanted: Wanted) -> str:
    """The hydration statement: $1 the viewer (NULL: anonymous), $2 the post ids. Aliases are ``h*``
    so domain.visibility.sql's expressions never capture them."""
    author_cols, author_out, author_joins, post_cols, post_joins = "", "", "", "", ""
    if wanted.user_counts:
        author_cols = (
            ", hcu.followers, hcu.following, hcu.posts, "
            + _hidden(hidden_followers_sql("ha.id", "hbp.ids"))
            + " AS hidden_followers, "
            + _hidden(hidden_following_sql("ha.id", "hbp.ids"))
            + " AS hidden_following"
        )
        author_out = ", a.followers, a.following, a.posts, a.hidden_followers, a.hidden_following"
        author_joins = _counts("ha.id", "hcu", ("followers", "following", "posts"))
    if wanted.post_counts:
        post_cols += (
            ", hcp.likes, hcp.comments, "
            + _hidden(hidden_likes_sql("hp.id", "hbp.ids"))
            + " AS hidden_likes, "
            + _hidden(hidden_comments_sql("hp.id", "hbp.ids"))
            + " AS hidden_comments"
        )
        post_joins = _counts("hp.id", "hcp", ("likes", "comments"))
    if wanted.viewer_liked:
        post_cols += ", hl.hit IS NOT NULL AS liked"
        post_joins += (
            " LEFT JOIN LATERAL (SELECT true AS hit FROM likes WHERE post_id = hp.id"
            " AND user_id = $1 LIMIT 1) hl ON true"
        )
    reader_cols = reader_out = ""
    if wanted.feed_reader:
        reader_cols = (
            f", ARRAY({PULL_AUTHORS_SQL}) AS pulls, EXISTS (SELECT 1 FROM users hv"
            f" WHERE hv.id = CAST($1 AS uuid) AND {is_active('hv')}) AS reader_active"
        )
        reader_out = ", hbp.pulls, hbp.reader_active"
    return f"""
    WITH hp AS MATERIALIZED (
        SELECT id, author_id, caption, media, created_at, deleted_at, state, failure_reason,
               edited_at
        FROM posts WHERE id = ANY(CAST($2 AS uuid[]))
    ),
    hbp AS MATERIALIZED (
        SELECT {BLOCK_PARTNERS.format(viewer="CAST($1 AS uuid)")} AS ids {reader_cols}
    ),
    a AS MATERIALIZED (
        SELECT ha.id, ha.username, ha.display_name, ha.bio, ha.status, ha.created_at,
               ha.is_private, ha.website, ha.avatar, ha.id = ANY(hbp.ids) AS blocked,
               hf.hit IS NOT NULL AS followed, hm.hit IS NOT NULL AS muted
               {author_cols}
        FROM users ha CROSS JOIN hbp
        LEFT JOIN LATERAL (SELECT true AS hit FROM follows WHERE follower_id = $1
                           AND followee_id = ha.id AND {is_live()} LIMIT 1) hf ON true
        LEFT JOIN LATERAL (SELECT true AS hit FROM mutes WHERE muter_id = $1
                           AND muted_id = ha.id LIMIT 1) hm ON true
        {author_joins}
        WHERE ha.id IN (SELECT author_id FROM hp)
    )
    SELECT hp.id, hp.author_id, hp.caption, NULLIF(hp.media, '[]') AS media, hp.created_at,
           hp.deleted_at, hp.state, hp.failure_reason, hp.edited_at,
           a.id AS a_id, a.username, a.display_name, a.bio, a.status,
           a.created_at AS a_created_at, a.is_private, a.website, a.avatar,
           a.blocked, a.followed, a.muted {author_out} {post_cols} {reader_out}
    FROM hp CROSS JOIN hbp LEFT JOIN a ON a.id = hp.author_id {post_joins}
    """


_STATEMENTS: dict[Wanted, str] = {}


@dataclass(frozen=True, slots=True)
class Hydration:
    """``posts`` by id (those that exist, deleted too); with :attr:`Wanted.feed_reader` and a
    row back, the pull authors the viewer follows and whether their account is active (else
    None)."""

    posts: dict[uuid.UUID, HydratedPost]
    pull_authors: list[uuid.UUID] | None = None
    reader_active: bool | None = None


async def hydrate_posts(
    db: AsyncEngine | AsyncConnection,
    viewer_id: uuid.UUID | None,
    post_ids: Sequence[uuid.UUID],
    wanted: Wanted = Wanted(),
) -> Hydration:
    """The posts of ``post_ids`` for ``viewer_id``, one statement (none for no ids)."""
    if not post_ids:
        return Hydration({})
    sql = _STATEMENTS.get(wanted)
    if sql is None:
        sql = _STATEMENTS[wanted] = _statement(wanted)
    rows = await fetch_rows(db, sql, viewer_id, list(dict.fromkeys(post_ids)))
    out: dict[uuid.UUID, HydratedPost] = {}
    for r in rows:  # by position: the columns of _statement, in its order
        pid, author_id, caption, media, *post_times = r[:9]
        # No media (most posts) comes as NULL: no JSON to decode.
        post = PostRecord(pid, author_id, caption, media or [], *post_times)
        author = UserRecord(*r[9:18]) if r[9] is not None else None
        rest = r[21:]
        author_counts = None
        if wanted.user_counts:
            followers, following, posts, hidden_followers, hidden_following = rest[:5]
            rest = rest[5:]
            author_counts = (
                (
                    visible_count(followers, hidden_followers),
                    visible_count(following, hidden_following),
                    visible_count(posts, 0),
                )
                if author is not None
                else (0, 0, 0)
            )
        post_counts = None
        if wanted.post_counts:
            likes, comments, hidden_likes, hidden_comments = rest[:4]
            rest = rest[4:]
            post_counts = (
                visible_count(likes, hidden_likes),
                visible_count(comments, hidden_comments),
            )
        out[post.id] = HydratedPost(
            post,
            author,
            bool(r[18]),
            bool(r[19]),
            bool(r[20]),
            author_counts,
            post_counts,
            rest[0] if wanted.viewer_liked else None,
        )
    if not (wanted.feed_reader and rows):
        return Hydration(out)
    return Hydration(out, list(rows[0][-2]), bool(rows[0][-1]))
