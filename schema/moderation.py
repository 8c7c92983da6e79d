"""Reports and moderation's GraphQL contract (README "Reports and moderation"): what
anyone reports, and what only moderators see and do."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Self

import strawberry
from strawberry import relay

from domain.moderation.reports import ReportRecord, reports_page
from schema import visibility
from schema.context import Context
from schema.errors import ForbiddenError, NotFoundError, ValidationError
from schema.ids import to_global_id
from schema.pagination import (
    DEFAULT_PAGE_SIZE,
    check_first,
    decode_cursor,
    encode_cursor,
    page_info,
)

if TYPE_CHECKING:
    from schema.posts import Post
    from schema.users import User

Info = strawberry.Info[Context, None]


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


@strawberry.input(description="What to report (a Post id or a User id), why, and details.")
class ReportInput:
    id: strawberry.ID
    reason: ReportReason
    note: str = strawberry.field(default="", description="Up to 1,000 characters.")


@strawberry.type(
    description="Your report is filed for the moderators (reporting the same thing again "
    "while it is open updates it: one report per reporter and target)."
)
class ReportSuccess:
    report_id: strawberry.ID
    reason: ReportReason
    note: str


ReportPostResult = Annotated[
    ReportSuccess | ValidationError | NotFoundError, strawberry.union("ReportPostResult")
]
ReportUserResult = Annotated[
    ReportSuccess | ValidationError | NotFoundError, strawberry.union("ReportUserResult")
]


def report_success(rec: ReportRecord) -> ReportSuccess:
    """The reporter's payload of a filed report."""
    return ReportSuccess(
        report_id=strawberry.ID(to_global_id("Report", rec.id)),
        reason=ReportReason(rec.reason),
        note=rec.note,
    )


@strawberry.type(description="A report, as moderators see it.")
class Report:
    id: strawberry.ID
    subject: ReportSubject
    reason: ReportReason
    note: str
    status: ReportStatus
    created_at: dt.datetime
    updated_at: dt.datetime = strawberry.field(description="The reporter's last change.")
    resolved_at: dt.datetime | None
    record: strawberry.Private[ReportRecord]

    @classmethod
    def from_record(cls, rec: ReportRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            id=strawberry.ID(to_global_id("Report", rec.id)),
            subject=ReportSubject(rec.subject),
            reason=ReportReason(rec.reason),
            note=rec.note,
            status=ReportStatus(rec.status),
            created_at=rec.created_at,
            updated_at=rec.updated_at,
            resolved_at=rec.resolved_at,
            record=rec,
        )

    @strawberry.field(description="Who reported it; null once their account is gone.")
    async def reporter(self, info: Info) -> Annotated[User, strawberry.lazy("schema.users")] | None:
        from schema.users import User as UserType

        (rec,) = await visibility.accounts(info.context, [self.record.reporter_id])
        return UserType.from_record(rec) if rec else None

    @strawberry.field(
        description="The reported account (USER), or the reported post's author (POST), "
        "active or banned, whatever its privacy; null once it is deleted."
    )
    async def reported_user(
        self, info: Info
    ) -> Annotated[User, strawberry.lazy("schema.users")] | None:
        from schema.users import User as UserType

        (rec,) = await visibility.reported_accounts(info.context, [self.record.user_id])
        return UserType.from_record(rec) if rec else None

    @strawberry.field(
        description="The reported post (POST), whatever its author's privacy; null for a "
        "USER report and once the post is deleted or removed."
    )
    async def post(self, info: Info) -> Annotated[Post, strawberry.lazy("schema.posts")] | None:
        from schema.posts import Post as PostType

        (rec,) = await visibility.reported_posts(info.context, [self.record.post_id])
        return PostType.from_record(rec) if rec else None

    @strawberry.field(description="The moderator who closed it (null while open).")
    async def resolved_by(
        self, info: Info
    ) -> Annotated[User, strawberry.lazy("schema.users")] | None:
        from schema.users import User as UserType

        (rec,) = await visibility.accounts(info.context, [self.record.resolved_by])
        return UserType.from_record(rec) if rec else None


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
        first: int = DEFAULT_PAGE_SIZE,
        after: str | None = None,
        status: ReportStatus = ReportStatus.OPEN,
    ) -> ReportConnection:
        ctx = info.context
        check_first(first, ctx.limits.max_page_size)
        position = decode_cursor(after) if after else None
        async with ctx.engine.connect() as conn:
            records, has_next = await reports_page(conn, status.value, first=first, after=position)
        edges = [
            ReportEdge(cursor=encode_cursor(r.position), node=Report.from_record(r))
            for r in records
        ]
        return ReportConnection(
            edges=edges, page_info=page_info([e.cursor for e in edges], has_next, after)
        )


ModerationResult = Annotated[Moderation | ForbiddenError, strawberry.union("ModerationResult")]


@strawberry.input
class BanUserInput:
    user_id: strawberry.ID = strawberry.field(description="A User global id.")


@strawberry.type(
    description="The account is banned (`banned` false: it already was): hidden from "
    "everyone, out of every count, its sessions ended; its open reports are actioned."
)
class BanUserSuccess:
    banned_user_id: strawberry.ID
    banned: bool
    resolved_reports: int


@strawberry.input
class RemovePostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")


@strawberry.type(
    description="The post is deleted (`removed` false: it already was) and leaves every "
    "feed; its open reports are actioned."
)
class RemovePostSuccess:
    removed_post_id: strawberry.ID
    removed: bool
    resolved_reports: int


@strawberry.input
class ResolveReportInput:
    report_id: strawberry.ID = strawberry.field(description="A Report id.")
    status: ReportResolution


@strawberry.type(description="The report is closed (a closed one is returned as it is).")
class ResolveReportSuccess:
    report: Report


BanUserResult = Annotated[
    BanUserSuccess | ForbiddenError | ValidationError | NotFoundError,
    strawberry.union("BanUserResult"),
]
RemovePostResult = Annotated[
    RemovePostSuccess | ForbiddenError | ValidationError | NotFoundError,
    strawberry.union("RemovePostResult"),
]
ResolveReportResult = Annotated[
    ResolveReportSuccess | ForbiddenError | ValidationError | NotFoundError,
    strawberry.union("ResolveReportResult"),
]
