"""Payloads and result unions of reportPost/reportUser, ``moderation`` and the
moderators' mutations."""

from __future__ import annotations

from typing import Annotated

import strawberry

from domain.moderation.reports import ReportRecord
from schema.errors import ForbiddenError, NotFoundError, ValidationError
from schema.ids import to_global_id
from schema.moderation.types import Moderation, Report, ReportReason


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


ModerationResult = Annotated[Moderation | ForbiddenError, strawberry.union("ModerationResult")]


@strawberry.type(
    description="The account is banned (`banned` false: it already was): hidden from "
    "everyone, out of every count, its sessions ended; its open reports are actioned."
)
class BanUserSuccess:
    banned_user_id: strawberry.ID
    banned: bool
    resolved_reports: int


@strawberry.type(
    description="The post is deleted (`removed` false: it already was) and leaves every "
    "feed; its open reports are actioned."
)
class RemovePostSuccess:
    removed_post_id: strawberry.ID
    removed: bool
    resolved_reports: int


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
