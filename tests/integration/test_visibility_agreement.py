"""The SQL twin of the visibility rule (domain.visibility.sql) and the Python rule
(domain.visibility.rules, over facts from domain.visibility.readers) agree over the whole
matrix: author public or private, active, banned, being deleted or deleted; post live or
deleted, published, processing or failed; the viewer anonymous, the owner, or another
account that follows or not and has a block either way or none; comments and replies by
every such account; and every count a viewer sees (likes, comments, followers,
following) equals the list the same viewer can page through.

The world is written with plain INSERTs, so it also holds combinations no use case
writes (a follow beside a block): the two rules must agree on those too.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from sqlalchemy import text

from domain.counters.verify import ACTUAL, verify_counts
from domain.db import new_id
from domain.realtime.queries import engagement_snapshots
from domain.visibility import readers
from domain.visibility.facts import Viewer
from domain.visibility.rules import (
    account_listed,
    comment_visible,
    post_published_visible,
    post_visible,
)
from domain.visibility.sql import visible_comment_sql, visible_post_sql

STATUSES = ("active", "banned", "pending_deletion", "deleted")
GONE = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)
BLOCKS = ("none", "viewer_blocks", "blocks_viewer")
#: (deleted, state) of each author's posts: live and deleted published ones, and live
#: ones still processing or failed (their author alone sees them, nobody engages).
POST_CASES = ((False, "published"), (True, "published"), (False, "processing"), (False, "failed"))


@dataclass
class World:
    authors: list[uuid.UUID]  # one per (private, status)
    viewers: list[uuid.UUID]  # one per (follows, block), related alike to every author,
    # and one who follows every author and has blocks with the first two
    posts: list[uuid.UUID]  # a live and a deleted post per author
    comments: list[uuid.UUID]  # top-level comments and replies
    all_viewers: list[uuid.UUID | None]  # anonymous, each author (owner), each viewer


async def _insert(conn, table: str, rows: list[dict]) -> None:
    cols = list(rows[0])
    await conn.execute(
        text(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join(':' + c for c in cols)})"
        ),
        rows,
    )


@pytest.fixture(scope="module")
async def world(engine) -> AsyncIterator[World]:
    users, follows, blocks, posts, comments, likes = [], [], [], [], [], []

    def user(status="active", private=False) -> uuid.UUID:
        uid = new_id()
        name = f"m{uid.hex[-16:]}"
        users.append(
            {
                "id": uid,
                "username": name,
                "display_name": name,
                "password_hash": "x",
                "status": status,
                "is_private": private,
            }
        )
        return uid

    authors = [user(s, p) for p, s in itertools.product((False, True), STATUSES)]
    viewers = []
    for follows_them, block in itertools.product((False, True), BLOCKS):
        v = user()
        viewers.append(v)
        for a in authors:
            if follows_them:
                follows.append({"id": new_id(), "follower_id": v, "followee_id": a})
            if block == "viewer_blocks":
                blocks.append({"blocker_id": v, "blocked_id": a})
            elif block == "blocks_viewer":
                blocks.append({"blocker_id": a, "blocked_id": v})
    # One more viewer who follows every author, blocks one (public, active) and is blocked
    # by one (public, banned), so
    # blocks hide likes, comments and follows from posts and profiles that still show.
    partial = user()
    viewers.append(partial)
    blocks.append({"blocker_id": partial, "blocked_id": authors[0]})
    blocks.append({"blocker_id": authors[1], "blocked_id": partial})  # banned, blocks them
    for a in authors:
        follows.append({"id": new_id(), "follower_id": partial, "followee_id": a})
    for a, b in itertools.permutations(authors, 2):  # followers of every status
        follows.append({"id": new_id(), "follower_id": a, "followee_id": b})
    for a in authors:
        for deleted, state in POST_CASES:
            pid = new_id()
            posts.append(
                {
                    "id": pid,
                    "author_id": a,
                    "caption": "x",
                    "deleted_at": GONE if deleted else None,
                    "state": state,
                }
            )
    for p in posts:
        if p["state"] != "published":
            continue  # nobody can like or comment on it (the write refuses: see below)
        for a in authors:
            likes.append({"post_id": p["id"], "user_id": a})
            top = new_id()
            comments.append(
                {
                    "id": top,
                    "post_id": p["id"],
                    "author_id": a,
                    "parent_id": None,
                    "body": "top",
                    "deleted_at": None,
                }
            )
            for r in authors:
                comments.append(
                    {
                        "id": new_id(),
                        "post_id": p["id"],
                        "author_id": r,
                        "parent_id": top,
                        "body": "reply",
                        "deleted_at": None,
                    }
                )
        # and one deleted top-level comment with a live reply under it
        gone = new_id()
        comments.append(
            {
                "id": gone,
                "post_id": p["id"],
                "author_id": authors[0],
                "parent_id": None,
                "body": "gone",
                "deleted_at": GONE,
            }
        )
        comments.append(
            {
                "id": new_id(),
                "post_id": p["id"],
                "author_id": authors[1],
                "parent_id": gone,
                "body": "orphan",
                "deleted_at": None,
            }
        )
    async with engine.begin() as conn:
        await _insert(conn, "users", users)
        await _insert(conn, "follows", follows)
        await _insert(conn, "blocks", blocks)
        await _insert(conn, "posts", posts)
        await _insert(conn, "comments", comments)
        await _insert(conn, "likes", likes)
        # The counters, as the use cases would have kept them (their definition), so the
        # database stays consistent for every later test and `roost counts verify`.
        ids = [u["id"] for u in users] + [p["id"] for p in posts]
        for kind in ("followers", "following", "posts", "likes", "comments"):
            await conn.execute(
                text(
                    "INSERT INTO counter_shards (entity_id, kind, shard, value)"
                    f" SELECT id, :kind, 0, n FROM ({ACTUAL[kind]}) t(id, n)"
                    " WHERE id = ANY(CAST(:ids AS uuid[]))"
                ),
                {"kind": kind, "ids": ids},
            )
    yield World(
        authors=authors,
        viewers=viewers,
        posts=[p["id"] for p in posts],
        comments=[c["id"] for c in comments],
        all_viewers=[None, *authors, *viewers],
    )
    # Gone again: the world holds follows beside blocks, which other tests rightly find
    # nowhere in the database.
    uids = [u["id"] for u in users]
    async with engine.begin() as conn:
        for sql in (
            "DELETE FROM likes WHERE user_id = ANY(CAST(:u AS uuid[]))",
            "DELETE FROM comments WHERE post_id = ANY(CAST(:p AS uuid[]))"
            " AND parent_id IS NOT NULL",
            "DELETE FROM comments WHERE post_id = ANY(CAST(:p AS uuid[]))",
            "DELETE FROM posts WHERE id = ANY(CAST(:p AS uuid[]))",
            "DELETE FROM follows WHERE follower_id = ANY(CAST(:u AS uuid[]))",
            "DELETE FROM blocks WHERE blocker_id = ANY(CAST(:u AS uuid[]))",
            "DELETE FROM counter_shards"
            " WHERE entity_id = ANY(CAST(:u AS uuid[]) || CAST(:p AS uuid[]))",
            "DELETE FROM users WHERE id = ANY(CAST(:u AS uuid[]))",
        ):
            await conn.execute(text(sql), {"u": uids, "p": [p["id"] for p in posts]})


async def python_viewer(conn, viewer_id, about) -> Viewer:
    """The Viewer facts as the schema loads them: block partners and follows."""
    if viewer_id is None:
        return Viewer.anonymous()
    return Viewer.of(
        viewer_id,
        blocked=await readers.blocks_between(conn, viewer_id, about),
        follows=await readers.follows(conn, viewer_id, about),
    )


async def sql_visible(conn, statement: str, items, viewers) -> set[tuple]:
    """The (item, viewer) pairs the SQL twin lets through, in one statement."""
    pairs = [(i, v) for i in items for v in viewers]
    rows = await conn.execute(
        text(
            f"SELECT r.i, r.v FROM unnest(CAST(:items AS uuid[]), CAST(:viewers AS uuid[]))"
            f" AS r(i, v) WHERE EXISTS ({statement})"
        ),
        {"items": [p[0] for p in pairs], "viewers": [p[1] for p in pairs]},
    )
    return {(r.i, r.v) for r in rows}


async def test_posts_agree_over_the_matrix(engine, world):
    async with engine.connect() as conn:
        sql = await sql_visible(
            conn, visible_post_sql("r.i", "r.v"), world.posts, world.all_viewers
        )
        posts = await readers.post_state(conn, world.posts)
        accounts = await readers.user_status(conn, world.authors)
        checked = 0
        for viewer_id in world.all_viewers:
            viewer = await python_viewer(conn, viewer_id, world.authors)
            for pid in world.posts:
                post = posts[pid]
                expected = post_visible(viewer, post, accounts[post.author_id])
                assert ((pid, viewer_id) in sql) is expected, (
                    post,
                    accounts[post.author_id],
                    viewer,
                )
                checked += 1
    assert checked == 32 * 16  # 4 posts x 8 authors; anonymous, 8 owners, 7 others
    unpublished = {pid for pid in world.posts if posts[pid].state != "published"}
    # An unpublished post shows to its author only, and does to them.
    assert {(p, v) for p, v in sql if p in unpublished} == {
        (p, posts[p].author_id)
        for p in unpublished
        if accounts[posts[p].author_id].status == "active"
    }
    # Some of each: the matrix is not vacuous.
    assert 0 < len(sql) < checked


async def test_comments_and_replies_agree_over_the_matrix(engine, world):
    async with engine.connect() as conn:
        sql = await sql_visible(
            conn, visible_comment_sql("r.i", "r.v"), world.comments, world.all_viewers
        )
        comments = await readers.comment_state(conn, world.comments)
        posts = await readers.post_state(conn, world.posts)
        accounts = await readers.user_status(conn, world.authors)
        checked = shown = 0
        for viewer_id in world.all_viewers:
            viewer = await python_viewer(conn, viewer_id, world.authors)
            for cid in world.comments:
                c = comments[cid]
                post = posts[c.post_id]
                parent = comments.get(c.parent_id) if c.parent_id else None
                expected = comment_visible(
                    viewer,
                    c,
                    author=accounts[c.author_id],
                    post=post,
                    post_author=accounts[post.author_id],
                    parent=parent,
                    parent_author=accounts[parent.author_id] if parent else None,
                )
                assert ((cid, viewer_id) in sql) is expected, (c, viewer)
                checked += 1
                shown += expected
    assert 0 < shown < checked


async def test_every_count_a_viewer_sees_equals_the_list_they_can_page(engine, world):
    """Where a count is shown (on a visible post, on a visible account), the count as this
    viewer reads it (readers.counts_seen_by: the counter less what blocks hide) equals
    the list this viewer is shown."""
    async with engine.connect() as conn:
        comments = await readers.comment_state(conn, world.comments)
        posts = await readers.post_state(conn, world.posts)
        everyone = [*world.authors, *world.viewers]
        accounts = await readers.user_status(conn, everyone)
        follow_rows = (
            await conn.execute(
                text("SELECT follower_id, followee_id FROM follows WHERE deleted_at IS NULL")
            )
        ).all()
        totals = await readers.counts_seen_by(conn, None, world.posts, ["likes", "comments"])
        checked = hidden_somewhere = 0
        for viewer_id in world.all_viewers:
            viewer = await python_viewer(conn, viewer_id, everyone)
            if viewer_id is not None:
                partners = await readers.block_partners(conn, viewer_id)
                assert viewer.blocked == partners & set(everyone)
            seen = await readers.counts_seen_by(conn, viewer_id, world.posts, ["likes", "comments"])
            for pid in world.posts:
                post = posts[pid]
                # (an unpublished post has no likes or comments to count)
                if not post_published_visible(viewer, post, accounts[post.author_id]):
                    continue
                likers = [a for a in world.authors if account_listed(viewer, accounts[a])]
                assert seen[(pid, "likes")] == len(likers)
                listed = [
                    c
                    for c in comments.values()
                    if c.post_id == pid
                    and comment_visible(
                        viewer,
                        c,
                        author=accounts[c.author_id],
                        post=post,
                        post_author=accounts[post.author_id],
                        parent=comments.get(c.parent_id) if c.parent_id else None,
                        parent_author=(
                            accounts[comments[c.parent_id].author_id] if c.parent_id else None
                        ),
                    )
                ]
                assert seen[(pid, "comments")] == len(listed)
                checked += 1
                hidden_somewhere += sum(
                    totals[(pid, k)] - seen[(pid, k)] for k in ("likes", "comments")
                )
            follow_counts = await readers.counts_seen_by(
                conn, viewer_id, world.authors, ["followers", "following"]
            )
            for a in world.authors:
                if accounts[a].status != "active":
                    continue  # no profile, no count shown
                shown_followers = [
                    f for f, g in follow_rows if g == a and account_listed(viewer, accounts[f])
                ]
                shown_following = [
                    g for f, g in follow_rows if f == a and account_listed(viewer, accounts[g])
                ]
                assert follow_counts[(a, "followers")] == len(shown_followers)
                assert follow_counts[(a, "following")] == len(shown_following)
                checked += 1
    assert checked > 0 and hidden_somewhere > 0


async def test_the_world_leaves_no_drift(engine, world):
    report = await verify_counts(engine)
    mine = set(world.authors) | set(world.viewers) | set(world.posts)
    assert [d for d in report.drift if d.entity_id in mine] == []


async def test_the_bulk_engagement_read_agrees_with_the_rule(engine, world):
    """postEngagementChanged's one-statement read (domain.realtime.queries): a row exactly
    for the visible posts, with the counts that viewer's lists have."""
    viewers = [v for v in world.all_viewers if v is not None]
    pairs = [(p, v) for p in world.posts for v in viewers]
    async with engine.connect() as conn:
        snaps = await engagement_snapshots(conn, pairs)
        posts = await readers.post_state(conn, world.posts)
        accounts = await readers.user_status(conn, [*world.authors, *world.viewers])
        seen = 0
        for (pid, vid), snap in zip(pairs, snaps, strict=True):
            viewer = await python_viewer(conn, vid, world.authors)
            post = posts[pid]
            expected = post_published_visible(viewer, post, accounts[post.author_id])
            assert (snap is not None) is expected
            if snap is None:
                continue
            seen_counts = await readers.counts_seen_by(conn, vid, [pid], ["likes", "comments"])
            assert (snap.likes, snap.comments) == (
                seen_counts[(pid, "likes")],
                seen_counts[(pid, "comments")],
            )
            seen += 1
    assert seen > 0
