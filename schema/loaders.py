"""Per-request dataloaders (aiodataloader), one per relation, named ``XByYLoader``.

Created fresh for every request (and, later, every subscription event) so nothing is
cached across users. Each batch opens its own pooled connection, runs one statement
for all the keys collected in that tick, and answers in key order.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import NamedTuple

from aiodataloader import DataLoader
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.engagement.add_comment import CommentRecord
from domain.engagement.queries import comments_by_ids, first_replies, liked_among
from domain.identity.queries import UserRecord, users_by_ids
from domain.posts.queries import PostRecord, posts_by_ids
from domain.social.queries import (
    blocked_among,
    followees_among,
    followers_among,
    muted_among,
    requested_among,
)
from domain.visibility.readers import counts_seen_by


class _EngineLoader(DataLoader):
    def __init__(self, engine: AsyncEngine) -> None:
        super().__init__()
        self.engine = engine


class UserByIdLoader(_EngineLoader):
    """``uuid -> UserRecord | None``."""

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[UserRecord | None]:
        async with self.engine.connect() as conn:
            found = await users_by_ids(conn, keys)
        return [found.get(k) for k in keys]


class UserCounts(NamedTuple):
    """A user's exact counts."""

    followers: int
    following: int
    posts: int


class _CountsLoader(_EngineLoader):
    """Counts as the request's viewer sees them (counts_seen_by: the counters less what
    blocks hide from the viewer's lists), one statement per batch."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID | None) -> None:
        super().__init__(engine)
        self.viewer_id = viewer_id

    async def _counts(self, keys: Sequence[uuid.UUID], kinds: Sequence[str]) -> dict:
        async with self.engine.connect() as conn:
            return await counts_seen_by(conn, self.viewer_id, list(dict.fromkeys(keys)), kinds)


class CountsByUserIdLoader(_CountsLoader):
    """``uuid -> UserCounts`` as the viewer sees them (one statement per batch)."""

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[UserCounts]:
        counts = await self._counts(keys, UserCounts._fields)
        return [UserCounts(*(counts[(k, kind)] for kind in UserCounts._fields)) for k in keys]


class PostByIdLoader(_EngineLoader):
    """``uuid -> PostRecord | None`` (deleted posts included, with ``deleted_at`` set)."""

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[PostRecord | None]:
        async with self.engine.connect() as conn:
            found = await posts_by_ids(conn, keys)
        return [found.get(k) for k in keys]


class _ViewerLoader(_EngineLoader):
    """A loader of booleans about (viewer, user) pairs; the viewer is fixed per request."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID) -> None:
        super().__init__(engine)
        self.viewer_id = viewer_id

    async def _matching(self, conn, keys: list[uuid.UUID]) -> set[uuid.UUID]:
        raise NotImplementedError

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[bool]:
        async with self.engine.connect() as conn:
            hits = await self._matching(conn, list(dict.fromkeys(keys)))
        return [k in hits for k in keys]


class ViewerFollowsByUserIdLoader(_ViewerLoader):
    """``user uuid -> does the viewer follow them``."""

    async def _matching(self, conn, keys):
        return await followees_among(conn, self.viewer_id, keys)


class FollowsViewerByUserIdLoader(_ViewerLoader):
    """``user uuid -> do they follow the viewer``."""

    async def _matching(self, conn, keys):
        return await followers_among(conn, self.viewer_id, keys)


class BlockWithViewerByUserIdLoader(_ViewerLoader):
    """``user uuid -> is there a block between them and the viewer (either way)``."""

    async def _matching(self, conn, keys):
        return await blocked_among(conn, self.viewer_id, keys)


class ViewerMutesByUserIdLoader(_ViewerLoader):
    """``user uuid -> has the viewer muted them``."""

    async def _matching(self, conn, keys):
        return await muted_among(conn, self.viewer_id, keys)


class PostCounts(NamedTuple):
    """A post's exact engagement counts."""

    likes: int
    comments: int


class CountsByPostIdLoader(_CountsLoader):
    """``post uuid -> PostCounts`` as the viewer sees them (one statement per batch)."""

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[PostCounts]:
        counts = await self._counts(keys, PostCounts._fields)
        return [PostCounts(*(counts[(k, kind)] for kind in PostCounts._fields)) for k in keys]


class CommentByIdLoader(_EngineLoader):
    """``comment uuid -> CommentRecord | None``."""

    async def batch_load_fn(self, keys: Sequence[uuid.UUID]) -> list[CommentRecord | None]:
        async with self.engine.connect() as conn:
            found = await comments_by_ids(conn, keys)
        return [found.get(k) for k in keys]


class FirstRepliesByParentIdLoader(_EngineLoader):
    """``(parent uuid, first) -> ([CommentRecord], has_more)``: one statement per batch
    (per distinct ``first``), a window per parent."""

    async def batch_load_fn(self, keys: Sequence[tuple[uuid.UUID, int]]):
        by_first: dict[int, list[uuid.UUID]] = {}
        for parent, first in keys:
            by_first.setdefault(first, []).append(parent)
        found: dict[tuple[uuid.UUID, int], tuple[list[CommentRecord], bool]] = {}
        async with self.engine.connect() as conn:
            for first, parents in by_first.items():
                for parent, page in (await first_replies(conn, parents, first=first)).items():
                    found[(parent, first)] = page
        return [found[k] for k in keys]


class ViewerLikedByPostIdLoader(_ViewerLoader):
    """``post uuid -> has the viewer liked it``."""

    async def _matching(self, conn, keys):
        return await liked_among(conn, self.viewer_id, keys)


class ViewerRequestedByUserIdLoader(_ViewerLoader):
    """``user uuid -> has the viewer a pending follow request to them``."""

    async def _matching(self, conn, keys):
        return await requested_among(conn, self.viewer_id, keys)


class Loaders:
    """The dataloaders of one request. Viewer loaders exist only with a viewer."""

    def __init__(self, engine: AsyncEngine, viewer_id: uuid.UUID | None) -> None:
        self.user_by_id = UserByIdLoader(engine)
        self.counts_by_user_id = CountsByUserIdLoader(engine, viewer_id)
        self.post_by_id = PostByIdLoader(engine)
        self.counts_by_post_id = CountsByPostIdLoader(engine, viewer_id)
        self.comment_by_id = CommentByIdLoader(engine)
        self.first_replies_by_parent_id = FirstRepliesByParentIdLoader(engine)
        self.viewer_liked: ViewerLikedByPostIdLoader | None = None
        self.viewer_follows: ViewerFollowsByUserIdLoader | None = None
        self.follows_viewer: FollowsViewerByUserIdLoader | None = None
        self.block_with_viewer: BlockWithViewerByUserIdLoader | None = None
        self.viewer_requested: ViewerRequestedByUserIdLoader | None = None
        self.viewer_mutes: ViewerMutesByUserIdLoader | None = None
        if viewer_id is not None:
            self.viewer_follows = ViewerFollowsByUserIdLoader(engine, viewer_id)
            self.follows_viewer = FollowsViewerByUserIdLoader(engine, viewer_id)
            self.block_with_viewer = BlockWithViewerByUserIdLoader(engine, viewer_id)
            self.viewer_requested = ViewerRequestedByUserIdLoader(engine, viewer_id)
            self.viewer_liked = ViewerLikedByPostIdLoader(engine, viewer_id)
            self.viewer_mutes = ViewerMutesByUserIdLoader(engine, viewer_id)
