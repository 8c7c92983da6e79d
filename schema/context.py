"""The typed per-request GraphQL context."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

import jwt
import strawberry
from graphql import GraphQLError
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.accounts.config import AccountsConfig
from domain.errors import DomainError
from domain.feed.config import FeedConfig, FeedStores
from domain.identity.queries import email_state
from domain.identity.session_store import SessionStore
from domain.identity.tokens import TokenConfig, decode_access_token
from domain.mail.config import MailConfig
from domain.media.config import MediaConfig
from domain.media.ports import ObjectStore
from domain.outbox.dispatch import Dispatcher
from domain.realtime import RealtimePublisher, Subscriptions
from domain.realtime.queries import EngagementReads
from domain.search.config import SearchConfig
from domain.search.snapshots import RankedSnapshots
from schema.loaders import Loaders
from schema.read_routing import ReadSource

T = TypeVar("T")


@functools.cache
def _parameters(use_case: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(use_case).parameters)


@dataclass(frozen=True)
class Limits:
    """Request limits handed down from settings."""

    counter_shards: int = 16
    max_page_size: int = 100
    post_edit_window_s: int = 86_400


@dataclass(frozen=True)
class Realtime:
    """The process's real-time services: the hub that serves its subscriptions, the
    publisher, the batched engagement reads; ``publish_engagement``: mutations publish
    like/comment changes right after their commit (else the worker does, from the
    outbox)."""

    hub: Subscriptions  # domain/realtime/ports.py (the adapter: app/realtime/hub.py)
    publisher: RealtimePublisher
    reads: EngagementReads
    publish_engagement: bool = True
    # The error an event's reads failing with ``exc`` deserve when a server it needs is
    # down (``SERVICE_UNAVAILABLE``), None when ``exc`` is no outage (app/operation.py).
    unavailable: Callable[[BaseException], GraphQLError | None] = lambda _exc: None


@dataclass(frozen=True)
class MediaAccess:
    """The API's side of the media pipeline: the object store (signed upload targets,
    arrival checks, public URLs) and the knobs."""

    store: ObjectStore
    config: MediaConfig


@dataclass
class Context:
    """What every resolver sees: the engine, token config, limits, the bearer token and
    the request's dataloaders.

    The token is decoded on first use: a request without one is anonymous
    (``viewer_id`` is None); one with a bad or expired token fails with
    ``UNAUTHENTICATED`` as soon as a resolver asks who the viewer is.
    """

    engine: AsyncEngine
    tokens: TokenConfig
    limits: Limits
    feed_config: FeedConfig = field(default_factory=FeedConfig)
    stores: FeedStores | None = None  # None: no Redis configured (no home feed: see below)
    dispatcher: Dispatcher | None = None  # enqueues outbox events after commit
    realtime: Realtime | None = None  # None: no Redis (no subscriptions)
    # Read replicas (schema/read_routing.py): a query's ``engine`` becomes the one this
    # picks (a replica, or the primary for a viewer who just wrote); None: primary only.
    reads: ReadSource | None = None
    sessions: SessionStore | None = None  # the session cache (log-out ends sessions there)
    search: SearchConfig = field(default_factory=SearchConfig)
    ranked_snapshots: RankedSnapshots | None = None  # None: no Redis (ranked live per page)
    accounts: AccountsConfig = field(default_factory=AccountsConfig)  # the account lifecycle
    mail: MailConfig = field(default_factory=MailConfig)  # verification and reset mails
    media: MediaAccess | None = None  # None: no object store (no uploads)
    bearer: str | None = None
    # WebSocket only: the connection_init payload (Strawberry sets it; the view's
    # on_ws_connect authenticates from it and sets ``bearer`` and when it expires).
    connection_params: dict[str, Any] | None = None
    bearer_expires_at: float | None = None  # epoch seconds
    #: Why a socket's connection_init was refused (its close reason).
    connection_refusal: str | None = None
    # The account a signUp/logIn of this operation signed in: its reads are then routed
    # like those of a viewer who just wrote (schema/read_routing.py).
    signed_in: uuid.UUID | None = None
    request: Any = None
    response: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def viewer_id(self) -> uuid.UUID | None:
        """The signed-in user's id (None if anonymous); a bad token raises UNAUTHENTICATED."""
        if self.bearer is None:
            return None
        try:
            return decode_access_token(self.tokens, self.bearer)
        except DomainError as exc:
            raise GraphQLError(exc.message, extensions={"code": "UNAUTHENTICATED"}) from None

    def feed_stores(self) -> FeedStores:
        """The feed store, or a ``SERVICE_UNAVAILABLE`` GraphQL error when no Redis is
        configured: the home feed is served from Redis, and from PostgreSQL only while
        a configured Redis fails (domain.feed.read_feed), never without one."""
        if self.stores is None:
            raise GraphQLError(
                "The home feed needs Redis (REDIS_URL).",
                extensions={"code": "SERVICE_UNAVAILABLE"},
            )
        return self.stores

    def require_viewer(self) -> uuid.UUID:
        """Return the viewer's id or raise an UNAUTHENTICATED GraphQL error."""
        viewer = self.viewer_id
        if viewer is None:
            raise GraphQLError(
                "Sign in first: send 'Authorization: Bearer <accessToken>'.",
                extensions={"code": "UNAUTHENTICATED"},
            )
        return viewer

    async def verified_viewer(self, field: str) -> uuid.UUID:
        """:meth:`require_viewer`, and for a root mutation ``field`` that
        REQUIRE_VERIFIED_EMAIL_FOR covers, an ``EMAIL_NOT_VERIFIED`` GraphQL error unless
        the viewer's e-mail address is verified (one query, only then)."""
        viewer = self.require_viewer()
        if field in self.mail.limited_mutations():
            if not (await email_state(self.engine, viewer)).verified:
                raise GraphQLError(
                    "Verify your e-mail address first: use the code mailed to you with "
                    "verifyEmail (requestEmailVerification sends a new one).",
                    extensions={"code": "EMAIL_NOT_VERIFIED"},
                )
        return viewer

    def viewer_session_id(self) -> uuid.UUID:
        """The session of the request's access token (its ``sid`` claim): the one place
        that knows where a request's session comes from. Raises UNAUTHENTICATED like any
        signed-in field when there is no valid token."""
        self.require_viewer()  # verifies the token: signature, expiry, type
        claims = jwt.decode(self.bearer or "", options={"verify_signature": False})
        return uuid.UUID(claims["sid"])

    @cached_property
    def loaders(self) -> Loaders:
        """This request's dataloaders (created on first use)."""
        try:
            viewer = self.viewer_id
        except GraphQLError:
            viewer = None
        return Loaders(self.engine, viewer)

    def for_event(self) -> Context:
        """A copy for one WebSocket operation or subscription event: same viewer and
        services, fresh dataloaders (nothing cached across events). The viewer checked
        at connect is kept until ``bearer_expires_at``; after it the copy decodes the
        token again, which fails UNAUTHENTICATED (an expired token ends the stream)."""
        copy = dataclasses.replace(self, extra={})
        viewer = self.__dict__.get("viewer_id")
        if viewer is not None and (
            self.bearer_expires_at is None or time.time() < self.bearer_expires_at
        ):
            copy.__dict__["viewer_id"] = viewer
        return copy

    async def mutate(self, use_case: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run a mutating use case: ``use_case(engine, *args, **kwargs)`` plus whichever
        of this process's ``counter_shards``, ``dispatcher`` (events dispatched right after
        the commit: domain.outbox.unit_of_work) and ``sessions`` (the session cache) its
        signature names (Cosmic Python's dependency injection by name); then drop the
        request's loader caches, which may hold what it changed. Raises what the use
        case raises (the caches are kept: nothing was written)."""
        names = _parameters(use_case)
        deps = {
            name: value
            for name, value in (
                ("counter_shards", self.limits.counter_shards),
                ("dispatcher", self.dispatcher),
                ("sessions", self.sessions),
            )
            if name in names and name not in kwargs
        }
        result = await use_case(self.engine, *args, **deps, **kwargs)
        self.reset_loaders()
        return result

    def reset_loaders(self) -> None:
        """Drop this request's loader caches (after a mutation changed what they hold)."""
        self.__dict__.pop("loaders", None)


#: What every resolver of the schema receives as ``info``: this context, no root value.
Info = strawberry.Info[Context, None]
