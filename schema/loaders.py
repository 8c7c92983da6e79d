"""Per-request dataloaders (aiodataloader), one per relation, named ``XByYLoader``.

Created fresh for every request (and, later, every subscription event) so nothing is
cached across users. Each batch runs one statement for all the keys collected in that
tick, directly on asyncpg over a pooled connection (domain.reads: one round trip, no
transaction), and answers in key order.
"""

from __future__ import annotations

import uuid
from asyncio import gather
from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import NamedTuple

from aiodataloader import DataLoader
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import comments_by_ids, first_replies, liked_among
from domain.feed.hydration import HydratedPost
from domain.feed.sources import followed_pull_authors
from domain.identity.queries import UserRecord, users_by_ids
from domain.posts.queries import PostRecord, PostRevision, first_revisions, posts_by_ids
from domain.social.queries import (
    blocked_among,
    followees_among,
    followers_among,
    muted_among,
    requested_among,
)
from domain.visibility.readers import counts_seen_by


class _EngineLoader(DataLoader):
    """A loader over ``engine`` whose ``known`` values (from a hydration read, see
    :meth:`Loaders.prime_hydrated`) answer without a statement; ``_load`` reads the
    others, one statement per batch."""

    def __init__(self, engine: AsyncEngine, known: dict | None = None) -> None:
        super().__init__()
        self.engine = engine
        self.known: dict = {} if known is None else known

    def load(self, key):
        """A known key not loaded yet resolves at once (no batch, no loop turn), to the
        value ``batch_load_fn`` would give it; the rest as any DataLoader's."""
        cache_key = self.get_cache_key(key)
        if key in self.known and cache_key not in self._cache:
            future = self.loop.create_future()
            future.set_result(self.known[key])
            if self.cache:
                self._cache[cache_key] = future
            return future
        return super().load(key)

    def load_many(self, keys):
        """:meth:`load` of each key; at once when every one resolved at once."""
        futures = [self.load(k) for k in keys]
        if all(f.done() for f in futures):
            out = self.loop.create_future()
            out.set_result([f.result() for f in futures])
            return out
        return gather(*futures)

    async def _load(self, keys: list) -> dict:
        """``{key: value}`` for every one of ``keys`` (distinct, none known)."""
        raise NotImplementedError

    async def batch_load_fn(self, keys: Sequence) -> list:
        known = self.known
        missing = [k for k in dict.fromkeys(keys) if k not in known]
        found = await self._load(missing) if missing else {}
        return [known[k] if k in known else found[k] for k in keys]


class UserByIdLoader(_EngineLoader):
    """``uuid -> UserRecord | None``."""

    async def _load(self, keys: list[uuid.UUID]) -> dict[uuid.UUID, UserRecord | None]:
        found = await users_by_ids(self.engine, keys)
        return {k: found.get(k) for k in keys}


class UserCounts(NamedTuple):
    """A user's exact counts."""

    followers: int
    following: int
    posts: int


class _CountsLoader(_EngineLoader):
    """Counts as the request's viewer sees them (counts_seen_by: the counters less what
    blocks hide from the viewer's lists), one statement per batch."""

    kinds: type[UserCounts] | type[PostCounts]

    def __init__(
        self, engine: AsyncEngine, viewer_id: uuid.UUID | None, known: dict | None = None
    ) -> None:
        super().__init__(engine, known)
        self.viewer_id = viewer_id

    async def _load(self, keys: list[uuid.UUID]) -> dict:
        kinds = self.kinds._fields
        counts = await counts_seen_by(self.engine, self.viewer_id, keys, kinds)
        return {k: self.kinds(*(counts[(k, kind)] for kind in kinds)) for k in keys}


class CountsByUserIdLoader(_CountsLoader):
    """``uuid -> UserCounts`` as the viewer sees them (one statement per batch)."""

    kinds = UserCounts


class PostByIdLoader(_EngineLoader):
    """``uuid -> PostRecord | None`` (deleted posts included, with ``deleted_at`` set)."""

    async def _load(self, keys: list[uuid.UUID]) -> dict[uuid.UUID, PostRecord | None]:
        found = await posts_by_ids(self.engine, keys)
        return {k: found.get(k) for k in keys}


class _ViewerLoader(_EngineLoader):
    """A loader of booleans about (viewer, user) pairs; the viewer is fixed per request."""

    def __init__(
        self, engine: AsyncEngine, viewer_id: uuid.UUID, known: dict | None = None
    ) -> None:
        super().__init__(engine, known)
        self.viewer_id = viewer_id

    async def _matching(self, db, keys: list[uuid.UUID]) -> set[uuid.UUID]:
        raise NotImplementedError

    async def _load(self, keys: list[uuid.UUID]) -> dict[uuid.UUID, bool]:
        hits = await self._matching(self.engine, keys)
        return {k: k in hits for k in keys}


class ViewerFollowsByUserIdLoader(_ViewerLoader):
    """``user uuid -> does the viewer follow them``."""

    async def _matching(self, db, keys):
        return await followees_among(db, self.viewer_id, keys)


class FollowsViewerByUserIdLoader(_ViewerLoader):
    """``user uuid -> do they follow the viewer``."""

    async def _matching(self, db, keys):
        return await followers_among(db, self.viewer_id, keys)


class BlockWithViewerByUserIdLoader(_ViewerLoader):
    """``user uuid -> is there a block between them and the viewer (either way)``."""

    async def _matching(self, db, keys):
        return await blocked_among(db, self.viewer_id, keys)


class ViewerMutesByUserIdLoader(_ViewerLoader):
    """``user uuid -> has the viewer muted them``."""

    async def _matching(self, db, keys):
        return await muted_among(db, self.viewer_id, keys)


class PostCounts(NamedTuple):
    """A post's exact engagement counts."""

    likes: int
    comments: int


class CountsByPostIdLoader(_CountsLoader):
    """``post uuid -> PostCounts`` as the viewer sees them (one statement per batch)."""

    kinds = PostCounts


class CommentByIdLoader(_EngineLoader):
    """``comment uuid -> CommentRecord | None``."""

    async def _load(self, keys: list[uuid.UUID]) -> dict[uuid.UUID, CommentRecord | None]:
        found = await comments_by_ids(self.engine, keys)
        return {k: found.get(k) for k in keys}


#: ``(owner uuid, size, from the end?)``: the key of a first (or last) page loader.
PageKey = tuple[uuid.UUID, int, bool]


def _by_size(keys: list[PageKey]) -> dict[tuple[int, bool], list[uuid.UUID]]:
    """The owners of ``keys`` by (size, from the end?): one statement each."""
    out: dict[tuple[int, bool], list[uuid.UUID]] = {}
    for owner, size, from_end in keys:
        out.setdefault((size, from_end), []).append(owner)
    return out


class FirstRepliesByParentIdLoader(_EngineLoader):
    """``(parent uuid, first, from the end?) -> ([CommentRecord], has_more)``: one
    statement per batch (per distinct page), a window per parent."""

    async def _load(self, keys: list[PageKey]) -> dict:
        found: dict[PageKey, tuple[list[CommentRecord], bool]] = {}
        for (size, end), parents in _by_size(keys).items():
            pages = await first_replies(self.engine, parents, first=size, from_end=end)
            found |= {(parent, size, end): page for parent, page in pages.items()}
        return found


class FirstRevisionsByPostIdLoader(_EngineLoader):
    """``(post uuid, first, from the end?) -> ([PostRevision], has_more)``: one
    statement per batch (per distinct page), a window per post."""

    async def _load(self, keys: list[PageKey]) -> dict:
        found: dict[PageKey, tuple[list[PostRevision], bool]] = {}
        for (size, end), posts in _by_size(keys).items():
            pages = await first_revisions(self.engine, posts, first=size, from_end=end)
            found |= {(post, size, end): page for post, page in pages.items()}
        return found


class ViewerLikedByPostIdLoader(_ViewerLoader):
    """``post uuid -> has the viewer liked it``."""

    async def _matching(self, db, keys):
        return await liked_among(db, self.viewer_id, keys)


class ViewerRequestedByUserIdLoader(_ViewerLoader):
    """``user uuid -> has the viewer a pending follow request to them``."""

    async def _matching(self, db, keys):
        return await requested_among(db, self.viewer_id, keys)


class Loaders:
    """The dataloaders of one request, each made on first use (a request reads a few of
    them). Viewer loaders exist only with a viewer (None when anonymous).

    What a hydration read (:meth:`prime_hydrated`) goes into plain dicts that the
    loaders consult before reading: no loader, future or statement is made for it
    unless a field asks."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID | None) -> None:
        self.engine = engine
        self.viewer_id = viewer_id
        self._users: dict = {}
        self._user_counts: dict = {}
        self._posts: dict = {}
        self._post_counts: dict = {}
        self._follows: dict = {}
        # Nobody blocks themselves.
        self._blocks: dict = {} if viewer_id is None else {viewer_id: False}
        self._mutes: dict = {}
        self._liked: dict = {}
        self._pull_authors: list[uuid.UUID] | None = None

    async def followed_pull_authors(self) -> list[uuid.UUID]:
        """The pull authors the viewer follows (read once per request)."""
        assert self.viewer_id is not None
        if self._pull_authors is None:
            self._pull_authors = await followed_pull_authors(self.engine, self.viewer_id)
        return self._pull_authors

    @cached_property
    def user_by_id(self) -> UserByIdLoader:
        return UserByIdLoader(self.engine, self._users)

    @cached_property
    def counts_by_user_id(self) -> CountsByUserIdLoader:
        return CountsByUserIdLoader(self.engine, self.viewer_id, self._user_counts)

    @cached_property
    def post_by_id(self) -> PostByIdLoader:
        return PostByIdLoader(self.engine, self._posts)

    @cached_property
    def counts_by_post_id(self) -> CountsByPostIdLoader:
        return CountsByPostIdLoader(self.engine, self.viewer_id, self._post_counts)

    @cached_property
    def comment_by_id(self) -> CommentByIdLoader:
        return CommentByIdLoader(self.engine)

    @cached_property
    def first_replies_by_parent_id(self) -> FirstRepliesByParentIdLoader:
        return FirstRepliesByParentIdLoader(self.engine)

    @cached_property
    def first_revisions_by_post_id(self) -> FirstRevisionsByPostIdLoader:
        return FirstRevisionsByPostIdLoader(self.engine)

    def _of_viewer(self, cls, known: dict | None = None):
        return None if self.viewer_id is None else cls(self.engine, self.viewer_id, known)

    @cached_property
    def viewer_liked(self) -> ViewerLikedByPostIdLoader | None:
        return self._of_viewer(ViewerLikedByPostIdLoader, self._liked)

    @cached_property
    def viewer_follows(self) -> ViewerFollowsByUserIdLoader | None:
        return self._of_viewer(ViewerFollowsByUserIdLoader, self._follows)

    @cached_property
    def follows_viewer(self) -> FollowsViewerByUserIdLoader | None:
        return self._of_viewer(FollowsViewerByUserIdLoader)

    @cached_property
    def block_with_viewer(self) -> BlockWithViewerByUserIdLoader | None:
        return self._of_viewer(BlockWithViewerByUserIdLoader, self._blocks)

    @cached_property
    def viewer_requested(self) -> ViewerRequestedByUserIdLoader | None:
        return self._of_viewer(ViewerRequestedByUserIdLoader)

    @cached_property
    def viewer_mutes(self) -> ViewerMutesByUserIdLoader | None:
        return self._of_viewer(ViewerMutesByUserIdLoader, self._mutes)

    def prime_hydrated(self, viewer_id: uuid.UUID, hydrated: Iterable[HydratedPost]) -> None:
        """Record what a hydration read (domain.feed.hydration) for the request's viewer
        ``viewer_id``: posts, authors, the viewer's blocks, follows and mutes of them,
        and the counts and likes it was asked for. The loaders answer those keys from
        it, without a statement (values already loaded stay as they are)."""
        if viewer_id != self.viewer_id:
            return  # facts of another viewer must not answer this request's
        for h in hydrated:
            post = h.post
            self._posts.setdefault(post.id, post)
            if h.post_counts is not None:
                self._post_counts.setdefault(post.id, PostCounts(*h.post_counts))
            if h.liked is not None:
                self._liked.setdefault(post.id, h.liked)
            author = post.author_id
            if author in self._users:
                continue
            self._users[author] = h.author
            if h.author_counts is not None:
                self._user_counts.setdefault(author, UserCounts(*h.author_counts))
            self._blocks.setdefault(author, h.blocked and author != viewer_id)
            self._follows.setdefault(author, h.followed)
            self._mutes.setdefault(author, h.muted)
