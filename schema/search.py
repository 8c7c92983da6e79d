"""``searchUsers`` and ``viewer.suggestedFollows``: ranked connections of users.

Both page a ranked list frozen on the first page (domain.search.paging): the cursor
names the snapshot, the offset in it and the last entry's rank (the keyset used when
the snapshot is gone). Users are hydrated through the request's dataloaders and
checked like any User node (banned, deleted or blocked either way: dropped), so a page
costs a constant number of statements whatever ``first`` is.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import strawberry
from graphql import GraphQLError
from strawberry import relay

from domain.errors import ValidationError
from domain.search.paging import Position, RankedList, RankedPage, ranked_page
from domain.search.ranking import Ranked
from domain.search.search_users import parse_query, search_users
from domain.search.suggested_follows import suggested_follows
from schema import visibility
from schema.context import Context
from schema.pagination import check_first, page_info

if TYPE_CHECKING:
    from schema.users import User

Info = strawberry.Info[Context, None]

_PREFIX = "r1:"
_SNAPSHOT_ID = re.compile(r"-|[A-Za-z0-9_-]{1,32}")


def encode_rank_cursor(position: Position) -> str:
    """The opaque cursor of a position in a ranked list."""
    last = position.last
    raw = (
        f"{_PREFIX}{position.snapshot_id or '-'}:{position.offset}:{last.score}:"
        f"{last.followers}:{last.user_id.hex}"
    )
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_rank_cursor(cursor: str) -> Position:
    """Inverse of :func:`encode_rank_cursor`; a BAD_USER_INPUT GraphQLError if malformed."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        raw = base64.urlsafe_b64decode(padded.encode("ascii")).decode()
        if not raw.startswith(_PREFIX):
            raise ValueError(raw)
        snapshot, offset, score, followers, pk = raw[len(_PREFIX) :].split(":")
        position = Position(
            None if snapshot == "-" else snapshot,
            int(offset),
            Ranked(uuid.UUID(hex=pk), int(score), int(followers)),
        )
        if not _SNAPSHOT_ID.fullmatch(snapshot) or not 1 <= position.offset < 2**31:
            raise ValueError(raw)
        if not -(2**31) <= position.last.score < 2**31:
            raise ValueError(raw)
        if not -(2**63) <= position.last.followers < 2**63:
            raise ValueError(raw)
        return position
    except (ValueError, UnicodeError, binascii.Error):
        raise GraphQLError(
            "The 'after' cursor is not valid.", extensions={"code": "BAD_USER_INPUT"}
        ) from None


@strawberry.type(description="A user found by searchUsers; the cursor is its place in the ranking.")
class UserSearchEdge:
    cursor: str
    node: Annotated[User, strawberry.lazy("schema.users")]
    score: int = strawberry.field(
        description="Match quality: 40 the username, 30 a username prefix, 25 the display "
        "name, 20 display-name word prefixes, 15 the same with typos corrected, 0-10 a "
        "username typo (similarity in tenths). Ties rank by followers."
    )


@strawberry.type(description="Users matching a search, best match first (Relay connection).")
class UserSearchConnection:
    edges: list[UserSearchEdge]
    page_info: relay.PageInfo


@strawberry.type(description="A suggested account; the cursor is its place in the ranking.")
class SuggestedFollowEdge:
    cursor: str
    node: Annotated[User, strawberry.lazy("schema.users")]
    followed_by_followees_count: int = strawberry.field(
        description="How many of your most recent followees follow this account (among "
        "their recent follows: the suggestion reads a bounded sample, README 'Suggested "
        "follows')."
    )


@strawberry.type(description="Accounts followed by people you follow, most shared first.")
class SuggestedFollowConnection:
    edges: list[SuggestedFollowEdge]
    page_info: relay.PageInfo


async def search_users_connection(
    info: Info, query: str, first: int, after: str | None
) -> UserSearchConnection:
    """``Query.searchUsers``: see domain.search.search_users for the ranking."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    position = decode_rank_cursor(after) if after else None
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
        first=first,
        after=position,
        snapshots=ctx.ranked_snapshots,
        max_results=config.max_results,
    )
    edges = [
        UserSearchEdge(cursor=cursor, node=user, score=entry.score)
        for entry, cursor, user in await _hydrate(info, page)
    ]
    return UserSearchConnection(
        edges=edges, page_info=_page_info(page, [e.cursor for e in edges], after)
    )


async def suggested_follows_connection(
    info: Info, viewer_id: uuid.UUID, first: int, after: str | None
) -> SuggestedFollowConnection:
    """``viewer.suggestedFollows``: see domain.search.suggested_follows."""
    ctx = info.context
    check_first(first, ctx.limits.max_page_size)
    position = decode_rank_cursor(after) if after else None
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
        first=first,
        after=position,
        snapshots=ctx.ranked_snapshots,
        max_results=config.max_results,
    )
    edges = [
        SuggestedFollowEdge(cursor=cursor, node=user, followed_by_followees_count=entry.score)
        for entry, cursor, user in await _hydrate(info, page, drop_followed=True)
    ]
    return SuggestedFollowConnection(
        edges=edges, page_info=_page_info(page, [e.cursor for e in edges], after)
    )


async def _hydrate(
    info: Info, page: RankedPage, *, drop_followed: bool = False
) -> list[tuple[Ranked, str, User]]:
    """The page's users through the dataloaders, with the standard checks of a User
    node: gone, banned or deleted, or a block either way (it may have happened since
    the list was frozen) drops the entry; ``drop_followed`` also drops accounts the
    viewer has followed since. Batched: one statement per loader, whatever the size."""
    from schema.users import User as UserType

    loaders = info.context.loaders
    ids = [entry.user_id for entry, _ in page.entries]
    nothing: Sequence[bool] = [False] * len(ids)

    async def flags(loader) -> Sequence[bool]:
        return nothing if loader is None else await loader.load_many(ids)

    records, followed = await asyncio.gather(
        visibility.accounts(info.context, ids, listed=True),  # the listing rule
        flags(loaders.viewer_follows if drop_followed else None),
    )
    out = []
    for (entry, position), rec, follows in zip(page.entries, records, followed, strict=True):
        if rec is None or follows:
            continue
        out.append((entry, encode_rank_cursor(position), UserType.from_record(rec)))
    return out


def _page_info(page: RankedPage, cursors: list[str], after: str | None) -> relay.PageInfo:
    # An entry dropped at hydration still moves the page on: the last cursor is the
    # position of the page's last entry, shown or not.
    end = encode_rank_cursor(page.entries[-1][1]) if page.entries else None
    info = page_info(cursors, page.has_next, after)
    if end is not None:
        info.end_cursor = end
    return info
