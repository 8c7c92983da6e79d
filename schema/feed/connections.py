"""``viewer.feed`` in its default order (RECENT): the hybrid home feed, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from graphql import GraphQLError

from domain.feed.hydration import HydratedPost
from domain.feed.post_filter import PostFilter
from domain.feed.read_feed import read_home_feed
from domain.feed.timelines import Entry
from domain.identity.admit_session import ACCOUNT_UNAVAILABLE
from schema.context import Info
from schema.feed.selection import wanted
from schema.feed.types import FeedConnection
from schema.pagination import Window, cursor_encoder, window_info
from schema.posts.types import PostEdge


def home_feed_filter(info: Info) -> PostFilter:
    """The visibility check of the viewer's home feed, hydrating what the selection
    under ``edges { node }`` asks for (schema.feed.selection) and the reader's own facts:
    the pull authors they follow (domain.feed.read_feed checks its guess of them against
    these) and whether their account is active (:func:`page_posts`)."""
    ctx = info.context
    facts = replace(wanted(info), feed_reader=True)
    return PostFilter(ctx.engine, ctx.require_viewer(), facts)


def page_posts(info: Info, check: PostFilter, entries: Sequence[Entry]) -> list[HydratedPost]:
    """The hydrated posts of a feed page's entries, primed into the request's loaders
    (the page's fields read no more). UNAUTHENTICATED when the page's hydration found the
    reader's account not active: a ban or deletion the session cache has not seen yet
    (``viewer`` above a feed reads no row of its own, resolvers/query.py)."""
    if check.reader_active is False:
        raise GraphQLError(ACCOUNT_UNAVAILABLE, extensions={"code": "UNAUTHENTICATED"})
    posts = check.posts(entries)
    info.context.loaders.prime_hydrated(check.viewer_id, posts)
    return posts


async def home_feed_connection(info: Info, window: Window) -> FeedConnection:
    """``viewer.feed``: the hybrid home feed (domain.feed.read_feed), each round of
    candidates hydrated in one statement (domain.feed.post_filter); ``window`` checked
    for the list ``("feed", viewer)`` (schema.pagination.check_window). Raises
    UNAUTHENTICATED without a viewer."""
    ctx = info.context
    viewer = ctx.require_viewer()
    check = home_feed_filter(info)
    stores = ctx.feed_stores()
    page = await read_home_feed(
        ctx.engine,
        stores,
        ctx.feed_config,
        viewer,
        first=window.size,
        before=Entry.of(*window.position) if window.position else None,
        visible=check,
        pull_authors=ctx.loaders.followed_pull_authors,
        rising=window.backward,
        guesses=stores.pull_guesses,
    )
    encode = cursor_encoder(("feed", viewer))
    edges = [
        PostEdge.of_hydrated(h, encode((h.post.created_at, h.post.id)))
        for h in page_posts(info, check, page.entries)
    ]
    return FeedConnection(
        edges=edges, page_info=window_info([e.cursor for e in edges], page.has_next, window)
    )
