"""``searchUsers`` and ``viewer.suggestedFollows``: ranked connections of users (see
the package docstring), and their cursors."""

from __future__ import annotations

import asyncio
import hashlib
import re
import uuid
from collections.abc import Sequence
from typing import Any

from graphql import GraphQLError
from strawberry import relay

from domain.errors import ValidationError
from domain.search.paging import Position, RankedList, RankedPage, ranked_page
from domain.search.ranking import Ranked
from domain.search.search_users import parse_query, search_users
from domain.search.suggested_follows import suggested_follows
from schema import visibility
from schema.context import Info
from schema.pagination import bad_cursor, check_first, pack, page_info, unpack
from schema.refs import UserRef, user_node
from schema.search.types import (
    SuggestedFollowConnection,
    SuggestedFollowEdge,
    UserSearchConnection,
    UserSearchEdge,
)

#: Each ranked list's cursors carry a prefix of their own: a cursor of one list is
#: BAD_USER_INPUT in the other (their snapshots and rankings have nothing in common).
SEARCH = "rs1:"
SUGGESTED = "rf1:"
_SNAPSHOT_ID = re.compile(r"-|[A-Za-z0-9_-]{1,32}")


def encode_rank_cursor(position: Position, prefix: str) -> str:
    """The opaque cursor of a position in the ranked list whose cursors start with
    ``prefix`` (:data:`SEARCH`, :data:`SUGGESTED`)."""
    last = position.last
    return pack(
        f"{prefix}{position.snapshot_id or '-'}:{position.offset}:{last.score}:"
        f"{last.followers}:{last.user_id.hex}"
    )


def decode_rank_cursor(cursor: str, prefix: str) -> Position:
    """Inverse of :func:`encode_rank_cursor`; a BAD_USER_INPUT GraphQLError if malformed
    or not a cursor of the list of ``prefix``."""
    try:
        _, rest = unpack(cursor, prefix)
        snapshot, offset, score, followers, pk = rest.split(":")
        position = Position(
            None if snapshot == "-" else snapshot,
            int(offset),
            Ranked(uuid.UUID(hex=pk), int(score), int(followers)),
        )
        if not _SNAPSHOT_ID.fullmatch(snapshot) or not 1 <= position.offset < 2**31:
            raise ValueError(rest)
        if not -(2**31) <= position.last.score < 2**31:
            raise ValueError(rest)
        if not -(2**63) <= position.last.followers < 2**63:
            raise ValueError(rest)
        return position
    except ValueError:
        raise bad_cursor() from None


async def search_users_connection(
    info: Info, query: str, first: int | None, after: str | None
) -> UserSearchConnection:
    """``Query.searchUsers``: see domain.search.search_users for the ranking."""
    ctx = info.context
    size = check_first(first, ctx.limits.max_page_size)
    position = decode_rank_cursor(after, SEARCH) if after else None
    try:
        parsed = parse_query(query)
    except ValidationError as exc:
        raise GraphQLError(exc.message, extensions={"code": "BAD_USER_INPUT"}) from None
    viewer = ctx.viewer_id
    config = ctx.search

    async def rank(limit: int, last: Ranked | None) -> list[Ranked]:
        return await search_users(
            ctx.engine,
            parsed,
            viewer_id=viewer,
            limit=limit,
            after=last,
            fuzzy_threshold=config.fuzzy_threshold,
        )

    fingerprint = hashlib.sha256(parsed.text.encode()).hexdigest()[:16]
    owner = str(viewer) if viewer else None
    page = await ranked_page(
        RankedList("search", owner, fingerprint, rank),
        first=size,
        after=position,
        snapshots=ctx.ranked_snapshots,
        max_results=config.max_results,
    )
    edges = [
        UserSearchEdge(cursor=cursor, node=user, score=entry.score)
        for entry, cursor, user in await _hydrate(info, page, SEARCH)
    ]
    return UserSearchConnection(
        edges=edges, page_info=_page_info(page, [e.cursor for e in edges], after, SEARCH)
    )


async def suggested_follows_connection(
    info: Info, viewer_id: uuid.UUID, first: int | None, after: str | None
) -> SuggestedFollowConnection:
    """``viewer.suggestedFollows``: see domain.search.suggested_follows."""
    ctx = info.context
    size = check_first(first, ctx.limits.max_page_size)
    position = decode_rank_cursor(after, SUGGESTED) if after else None
    config = ctx.search

    async def rank(limit: int, last: Ranked | None) -> list[Ranked]:
        return await suggested_follows(
            ctx.engine,
            viewer_id,
            limit=limit,
            after=last,
            followees=config.suggest_followees,
            per_followee=config.suggest_per_followee,
        )

    fingerprint = f"{config.suggest_followees}x{config.suggest_per_followee}"
    page = await ranked_page(
        RankedList("suggest", str(viewer_id), fingerprint, rank),
        first=size,
        after=position,
        snapshots=ctx.ranked_snapshots,
        max_results=config.max_results,
    )
    edges = [
        SuggestedFollowEdge(cursor=cursor, node=user, followed_by_followees_count=entry.score)
        for entry, cursor, user in await _hydrate(info, page, SUGGESTED, drop_followed=True)
    ]
    return SuggestedFollowConnection(
        edges=edges, page_info=_page_info(page, [e.cursor for e in edges], after, SUGGESTED)
    )


async def _hydrate(
    info: Info, page: RankedPage, prefix: str, *, drop_followed: bool = False
) -> list[tuple[Ranked, str, UserRef]]:
    """The page's users through the dataloaders, with the standard checks of a User
    node: gone, banned or deleted, or a block either way (it may have happened since
    the list was frozen) drops the entry; ``drop_followed`` also drops accounts the
    viewer has followed since. Batched: one statement per loader, whatever the size."""
    loaders = info.context.loaders
    ids = [entry.user_id for entry, _ in page.entries]
    nothing: Sequence[bool] = [False] * len(ids)

    async def flags(loader: Any) -> Sequence[bool]:
        return nothing if loader is None else await loader.load_many(ids)

    records, followed = await asyncio.gather(
        visibility.accounts(info.context, ids, listed=True),  # the listing rule
        flags(loaders.viewer_follows if drop_followed else None),
    )
    out = []
    for (entry, position), rec, follows in zip(page.entries, records, followed, strict=True):
        if rec is None or follows:
            continue
        out.append((entry, encode_rank_cursor(position, prefix), user_node(rec)))
    return out


def _page_info(
    page: RankedPage, cursors: list[str], after: str | None, prefix: str
) -> relay.PageInfo:
    # An entry dropped at hydration still moves the page on: the last cursor is the
    # position of the page's last entry, shown or not.
    end = encode_rank_cursor(page.entries[-1][1], prefix) if page.entries else None
    info = page_info(cursors, page.has_next, after)
    if end is not None:
        info.end_cursor = end
    return info
