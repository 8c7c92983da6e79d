"""The one way from GraphQL to the visibility rule (docs/api/visibility.md "Who sees what").

Every edge that returns a ``User``, ``Post``, ``Comment`` or ``Notification`` (fields,
``node``/``nodes``, lists, mutation payloads, subscription events) asks here. Each
function takes the request's (or the subscription event's) :class:`Context`, loads the
facts through its dataloaders (accounts, posts, comments, and the viewer's blocks and
follows of the accounts in question: a constant number of statements whatever the
number of objects, none for facts already primed), and decides with the pure rule of
:mod:`domain.visibility.rules`. Counts come from the counts loaders, which read them as
the viewer sees them (``domain.visibility.readers.counts_seen_by``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable, Sequence

from domain.engagement.add_comment import CommentRecord
from domain.feed.hydration import HydratedPost, Wanted
from domain.feed.post_filter import PostFilter
from domain.identity.queries import UserRecord
from domain.notifications.queries import NotificationRecord
from domain.posts.queries import PostRecord
from domain.visibility import rules
from domain.visibility.facts import Viewer
from schema.context import Context


async def _flags(loader, keys: list[uuid.UUID]) -> list[bool]:
    return list(await loader.load_many(keys)) if loader is not None and keys else []


async def viewer_facts(
    ctx: Context,
    accounts: Iterable[uuid.UUID],
    *,
    follows_of: Iterable[uuid.UUID] = (),
    mutes_of: Iterable[uuid.UUID] = (),
) -> Viewer:
    """The viewer and their relations to ``accounts``: blocks either way for all of
    them, follows for ``follows_of`` (the ones whose content needs a follow), mutes for
    ``mutes_of`` (the authors of a home feed, the actors of notifications). Three loader
    batches at most, run together; none when anonymous."""
    viewer = ctx.viewer_id
    if viewer is None:
        return Viewer.anonymous()
    others = [a for a in dict.fromkeys(accounts) if a != viewer]
    ask = [a for a in dict.fromkeys(follows_of) if a != viewer]
    mutes = [a for a in dict.fromkeys(mutes_of) if a != viewer]
    if not (others or ask or mutes):  # only the viewer: no relation to read
        return Viewer(viewer)
    loaders = ctx.loaders
    blocked, follows, muted = await asyncio.gather(
        _flags(loaders.block_with_viewer, others),
        _flags(loaders.viewer_follows, ask),
        _flags(loaders.viewer_mutes, mutes),
    )
    return Viewer(
        viewer,
        frozenset(a for a, b in zip(others, blocked, strict=True) if b),
        frozenset(a for a, f in zip(ask, follows, strict=True) if f),
        frozenset(a for a, m in zip(mutes, muted, strict=True) if m),
    )


async def _accounts(ctx: Context, ids: Iterable[uuid.UUID]) -> dict[uuid.UUID, UserRecord | None]:
    wanted = list(dict.fromkeys(ids))
    if not wanted:
        return {}
    return dict(zip(wanted, await ctx.loaders.user_by_id.load_many(wanted), strict=True))


async def accounts(
    ctx: Context, ids: Sequence[uuid.UUID | None], *, listed: bool = False
) -> list[UserRecord | None]:
    """The accounts of ``ids`` (in order) the viewer may see, else None: their profile
    (``listed`` False: reached directly, by id, username or a mutation's payload), or as
    an entry of a list or the author or actor of something (``listed``: no block
    either way either)."""
    found = await _accounts(ctx, (i for i in ids if i is not None))
    viewer = await viewer_facts(ctx, found if listed else ())
    rule = rules.account_listed if listed else rules.account_visible
    return [found[i] if i is not None and rule(viewer, found[i]) else None for i in ids]


async def content_visible(ctx: Context, account_id: uuid.UUID) -> bool:
    """Whether the viewer may see this account's posts and follow lists."""
    found = await _accounts(ctx, [account_id])
    account = found[account_id]
    viewer = await viewer_facts(
        ctx, [account_id], follows_of=[account_id] if account and account.is_private else []
    )
    return rules.content_visible(viewer, account)


async def visible_posts(
    ctx: Context, records: Sequence[PostRecord | None], *, home_feed: bool = False
) -> list[bool]:
    """Which of the posts the viewer may see (``home_feed``: which belong in their home
    feed now, which also needs the author followed or the viewer's own)."""
    authors = await _accounts(ctx, (r.author_id for r in records if r is not None))
    gated = [a for a, u in authors.items() if home_feed or (u is not None and u.is_private)]
    viewer = await viewer_facts(
        ctx, authors, follows_of=gated, mutes_of=authors if home_feed else ()
    )
    rule = rules.in_home_feed if home_feed else rules.post_visible
    return [r is not None and rule(viewer, r, authors[r.author_id]) for r in records]


async def explore_posts(
    ctx: Context, ids: Sequence[uuid.UUID], wanted: Wanted = Wanted()
) -> dict[uuid.UUID, HydratedPost]:
    """The posts of ``ids`` that may show in the viewer's explore now (rules.in_explore),
    hydrated (domain.feed.post_filter) and primed into the request's dataloaders. The
    viewer must be signed in."""
    check = PostFilter(ctx.engine, ctx.require_viewer(), wanted, rules.in_explore)
    found = await check.hydrate(ids)
    ctx.loaders.prime_hydrated(check.viewer_id, found.values())
    return found


async def posts(ctx: Context, ids: Sequence[uuid.UUID | None]) -> list[PostRecord | None]:
    """The posts of ``ids`` (in order) the viewer may see, else None."""
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    loaded = dict(zip(wanted, await ctx.loaders.post_by_id.load_many(wanted), strict=True))
    records = list(loaded.values())
    ok = dict(zip(wanted, await visible_posts(ctx, records), strict=True))
    return [loaded[i] if i is not None and ok[i] else None for i in ids]


async def visible_comments(ctx: Context, records: Sequence[CommentRecord | None]) -> list[bool]:
    """Which of the comments the viewer may see (rules.comment_visible): each needs its
    author, its post and the post's author, and for a reply its top-level comment and
    that comment's author."""
    live = [r for r in records if r is not None]
    parent_ids = list({r.parent_id for r in live if r.parent_id is not None})
    post_ids = list({r.post_id for r in live})
    loaders = ctx.loaders
    parents_found, posts_found = await asyncio.gather(
        loaders.comment_by_id.load_many(parent_ids), loaders.post_by_id.load_many(post_ids)
    )
    parents = dict(zip(parent_ids, parents_found, strict=True))
    post_of = dict(zip(post_ids, posts_found, strict=True))
    people = {r.author_id for r in live}
    people |= {p.author_id for p in post_of.values() if p is not None}
    people |= {p.author_id for p in parents.values() if p is not None}
    found = await _accounts(ctx, people)
    gated = [
        p.author_id
        for p in post_of.values()
        if p is not None and (author := found.get(p.author_id)) is not None and author.is_private
    ]
    viewer = await viewer_facts(ctx, found, follows_of=gated)
    out = []
    for r in records:
        if r is None:
            out.append(False)
            continue
        post = post_of.get(r.post_id)
        parent = parents.get(r.parent_id) if r.parent_id is not None else None
        out.append(
            rules.comment_visible(
                viewer,
                r,
                author=found.get(r.author_id),
                post=post,
                post_author=found.get(post.author_id) if post else None,
                parent=parent,
                parent_author=found.get(parent.author_id) if parent else None,
            )
        )
    return out


async def comments(ctx: Context, ids: Sequence[uuid.UUID | None]) -> list[CommentRecord | None]:
    """The comments of ``ids`` (in order) the viewer may see, else None."""
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    loaded = dict(zip(wanted, await ctx.loaders.comment_by_id.load_many(wanted), strict=True))
    ok = dict(zip(wanted, await visible_comments(ctx, list(loaded.values())), strict=True))
    return [loaded[i] if i is not None and ok[i] else None for i in ids]


async def visible_notifications(
    ctx: Context, records: Sequence[NotificationRecord | None]
) -> list[bool]:
    """Which of the notifications the viewer may see: their own, someone still behind
    it, its actor listed for them (rules.notification_visible). What it points to (post,
    comment) is decided field by field."""
    actors = await _accounts(ctx, (r.actor_id for r in records if r and r.actor_id))
    viewer = await viewer_facts(ctx, actors, mutes_of=actors)
    return [
        r is not None
        and rules.notification_visible(viewer, r, actors.get(r.actor_id) if r.actor_id else None)
        for r in records
    ]


async def reported_accounts(
    ctx: Context, ids: Sequence[uuid.UUID | None]
) -> list[UserRecord | None]:
    """For a moderator reading reports: the reported accounts of ``ids`` (in order) a
    moderator reviews (rules.reported_account_visible: active or banned), else None.
    Only the moderation fields call this, after checking the role."""
    found = await _accounts(ctx, (i for i in ids if i is not None))
    return [
        found[i] if i is not None and rules.reported_account_visible(found[i]) else None
        for i in ids
    ]


async def reported_posts(ctx: Context, ids: Sequence[uuid.UUID | None]) -> list[PostRecord | None]:
    """For a moderator reading reports: the reported posts of ``ids`` (in order) still
    there to review (rules.reported_post_visible, whatever their author's privacy),
    else None. Only the moderation fields call this, after checking the role."""
    wanted = [i for i in dict.fromkeys(ids) if i is not None]
    loaded = dict(zip(wanted, await ctx.loaders.post_by_id.load_many(wanted), strict=True))
    authors = await _accounts(ctx, (r.author_id for r in loaded.values() if r is not None))
    return [
        loaded[i]
        if i is not None
        and loaded[i] is not None
        and rules.reported_post_visible(loaded[i], authors.get(loaded[i].author_id))
        else None
        for i in ids
    ]
