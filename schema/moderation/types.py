"""Reports as moderators see them: the ``Report`` type, its enums, the report queue
connection, and ``Moderation`` (what only moderators read)."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import Annotated, Self

import strawberry
from strawberry import relay

from domain.moderation.moderators import is_moderator
from domain.moderation.reports import ReportRecord, reports_by_ids, reports_page
from schema import visibility
from schema.context import Info
from schema.ids import parse_node_ids
from schema.pagination import (
    BEFORE,
    DEFAULT_PAGE_SIZE,
    LAST,
    check_window,
    cursor_encoder,
    window_info,
)
from schema.posts.types import Post
from schema.refs import UserRef, user_node


@strawberry.enum(description="Why something is reported.")
class ReportReason(Enum):
    SPAM = "spam"
    HARASSMENT = "harassment"
    HATE_SPEECH = "hate_speech"
    VIOLENCE = "violence"
    NUDITY = "nudity"
    SELF_HARM = "self_harm"
    MISINFORMATION = "misinformation"
    IMPERSONATION = "impersonation"
    INTELLECTUAL_PROPERTY = "intellectual_property"
    OTHER = "other"
    KNOWN_BAD_MEDIA = strawberry.enum_value(
        "known_bad_media",
        description="Filed by Roost: a post's media matched the known-bad list (it was "
        "never published). Not a reason a person can give.",
    )


@strawberry.enum(
    description="Where a report is: OPEN until a moderator acts on it or dismisses it."
)
class ReportStatus(Enum):
    OPEN = "open"
    ACTIONED = "actioned"
    DISMISSED = "dismissed"


@strawberry.enum(description="How a moderator closes a report.")
class ReportResolution(Enum):
    ACTIONED = "actioned"
    DISMISSED = "dismissed"


@strawberry.enum(description="What a report is about.")
class ReportSubject(Enum):
    POST = "post"
    USER = "user"


@strawberry.type(
    description="A report, as moderators see it; `node(id:)` also gives it to its reporter "
    "(who sees `resolvedBy` null), to nobody else."
)
class Report(relay.Node):
    pk: relay.NodeID[str]
    subject: ReportSubject
    reason: ReportReason
    note: str
    status: ReportStatus
    created_at: dt.datetime
    updated_at: dt.datetime = strawberry.field(description="The reporter's last change.")
    resolved_at: dt.datetime | None
    record: strawberry.Private[ReportRecord]
    # False: read by its reporter through node(id:), who does not learn the moderator.
    as_moderator: strawberry.Private[bool] = True

    @classmethod
    def from_record(cls, rec: ReportRecord, *, as_moderator: bool = True) -> Self:
        """Build the GraphQL object from a domain record (``as_moderator``: the viewer
        is a moderator, not only its reporter)."""
        return cls(
            pk=str(rec.id),
            subject=ReportSubject(rec.subject),
            reason=ReportReason(rec.reason),
            note=rec.note,
            status=ReportStatus(rec.status),
            created_at=rec.created_at,
            updated_at=rec.updated_at,
            resolved_at=rec.resolved_at,
            record=rec,
            as_moderator=as_moderator,
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: a report for a moderator or for its reporter, null
        for anyone else (anonymous included) and for an id that is no report."""
        ctx = info.context
        viewer = ctx.viewer_id
        if viewer is None:
            return [None] * len(node_ids)
        ids = parse_node_ids(node_ids)
        async with ctx.engine.connect() as conn:
            found = await reports_by_ids(conn, [i for i in ids if i is not None])
            moderator = await is_moderator(conn, viewer) if found else False
        out: list[Self | None] = []
        for pk in ids:
            rec = found.get(pk) if pk is not None else None
            if rec is not None and (moderator or rec.reporter_id == viewer):
                out.append(cls.from_record(rec, as_moderator=moderator))
            else:
                out.append(None)
        return out

    @strawberry.field(description="Who reported it; null once their account is gone.")
    async def reporter(self, info: Info) -> UserRef | None:
        (rec,) = await visibility.accounts(info.context, [self.record.reporter_id])
        return user_node(rec) if rec else None

    @strawberry.field(
        description="The reported account (USER), or the reported post's author (POST), "
        "active or banned, whatever its privacy; null once it is deleted."
    )
    async def reported_user(self, info: Info) -> UserRef | None:
        (rec,) = await visibility.reported_accounts(info.context, [self.record.user_id])
        return user_node(rec) if rec else None

    @strawberry.field(
        description="The reported post (POST), whatever its author's privacy; null for a "
        "USER report and once the post is deleted or removed."
    )
    async def post(self, info: Info) -> Post | None:
        (rec,) = await visibility.reported_posts(info.context, [self.record.post_id])
        return Post.from_record(rec) if rec else None

    @strawberry.field(
        description="The moderator who closed it (null while open, and for its reporter)."
    )
    async def resolved_by(self, info: Info) -> UserRef | None:
        if not self.as_moderator:
            return None
        (rec,) = await visibility.accounts(info.context, [self.record.resolved_by])
        return user_node(rec) if rec else None


@strawberry.type(description="A report in the queue; the cursor is its position.")
class ReportEdge:
    cursor: str
    node: Report


@strawberry.type(description="Reports of one status, oldest first (Relay connection).")
class ReportConnection:
    edges: list[ReportEdge]
    page_info: relay.PageInfo


@strawberry.type(description="What moderators read. Only moderators reach it.")
class Moderation:
    moderator_id: strawberry.Private[uuid.UUID]

    @strawberry.field(description="Reports of `status` (OPEN by default), oldest first.")
    async def reports(
        self,
        info: Info,
        first: int | None = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        status: ReportStatus = ReportStatus.OPEN,
        last: Annotated[int | None, strawberry.argument(description=LAST)] = None,
        before: Annotated[str | None, strawberry.argument(description=BEFORE)] = None,
    ) -> ReportConnection:
        ctx = info.context
        of = ("reports", status.value)
        window = check_window(first, after, last, before, ctx.limits.max_page_size, of)
        async with ctx.engine.connect() as conn:
            records, has_next = await reports_page(
                conn,
                status.value,
                first=window.size,
                after=window.position,
                backward=window.backward,
            )
        encode = cursor_encoder(of)
        edges = [ReportEdge(cursor=encode(r.position), node=Report.from_record(r)) for r in records]
        return ReportConnection(
            edges=edges, page_info=window_info([e.cursor for e in edges], has_next, window)
        )
