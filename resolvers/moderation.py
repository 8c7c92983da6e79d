"""Reports and moderation (docs/api/moderation.md "Reports and moderation"): reportPost and
reportUser for everyone; Query.moderation, banUser, removePost and resolveReport for
moderators only, on every transport (the role is read from PostgreSQL on each use)."""

from __future__ import annotations

import strawberry

from domain.moderation.ban_user import ban_user
from domain.moderation.errors import NotModeratorError
from domain.moderation.moderators import is_moderator
from domain.moderation.remove_post import remove_post
from domain.moderation.report_post import report_post
from domain.moderation.report_user import report_user
from domain.moderation.resolve_report import resolve_report
from schema.context import Info
from schema.errors import ForbiddenError, typed_errors
from schema.ids import decode_global_id
from schema.moderation.inputs import BanUserInput, RemovePostInput, ReportInput, ResolveReportInput
from schema.moderation.results import (
    BanUserResult,
    BanUserSuccess,
    RemovePostResult,
    RemovePostSuccess,
    ReportPostResult,
    ReportUserResult,
    ResolveReportResult,
    ResolveReportSuccess,
    report_success,
)
from schema.moderation.types import Moderation, Report


async def _require_moderator(info: Info) -> None:
    """Raise NotModeratorError (FORBIDDEN) in a moderator-only mutation for a viewer who
    is not one, before anything of the input is checked (the use case checks the role
    again in its transaction)."""
    ctx = info.context
    async with ctx.engine.connect() as conn:
        allowed = await is_moderator(conn, ctx.viewer_id)
    if not allowed or ctx.viewer_id is None:
        raise NotModeratorError()


@typed_errors
async def moderation_root(info: Info) -> Moderation | ForbiddenError:
    """``Query.moderation``: for a moderator, the moderation root; for anyone else
    (anonymous included) a typed ForbiddenError (``FORBIDDEN``), on every transport."""
    ctx = info.context
    viewer = ctx.viewer_id
    async with ctx.engine.connect() as conn:
        allowed = await is_moderator(conn, viewer)
    if not allowed or viewer is None:
        raise NotModeratorError("Only moderators can read this.")
    return Moderation(moderator_id=viewer)


@strawberry.type
class ModerationMutations:
    @strawberry.mutation(
        description="Report a post you can see to the moderators. Idempotent per post: "
        "reporting it again while your report is open updates the reason and note."
    )
    @typed_errors
    async def report_post(self, info: Info, input: ReportInput) -> ReportPostResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        post_id = decode_global_id(input.id, "Post", "id")
        rec = await report_post(
            ctx.engine, viewer, post_id, reason=input.reason.value, note=input.note
        )
        return report_success(rec)

    @strawberry.mutation(
        description="Report an account to the moderators. Idempotent per account: reporting "
        "it again while your report is open updates the reason and note."
    )
    @typed_errors
    async def report_user(self, info: Info, input: ReportInput) -> ReportUserResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        user_id = decode_global_id(input.id, "User", "id")
        rec = await report_user(
            ctx.engine, viewer, user_id, reason=input.reason.value, note=input.note
        )
        return report_success(rec)

    @strawberry.mutation(
        description="Moderators: ban an account (hidden everywhere, out of every count, its "
        "sessions ended) and action its open reports. Idempotent."
    )
    @typed_errors
    async def ban_user(self, info: Info, input: BanUserInput) -> BanUserResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        await _require_moderator(info)
        user_id = decode_global_id(input.user_id, "User", "userId")
        ban = await ctx.mutate(
            ban_user,
            viewer,
            user_id,
        )
        return BanUserSuccess(
            banned_user_id=strawberry.ID(input.user_id),
            banned=ban.banned,
            resolved_reports=ban.resolved_reports,
        )

    @strawberry.mutation(
        description="Moderators: remove a post (deleted, out of every feed) and action its "
        "open reports. Idempotent."
    )
    @typed_errors
    async def remove_post(self, info: Info, input: RemovePostInput) -> RemovePostResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        await _require_moderator(info)
        post_id = decode_global_id(input.post_id, "Post", "postId")
        removal = await ctx.mutate(
            remove_post,
            viewer,
            post_id,
        )
        return RemovePostSuccess(
            removed_post_id=strawberry.ID(input.post_id),
            removed=removal.removed,
            resolved_reports=removal.resolved_reports,
        )

    @strawberry.mutation(description="Moderators: close a report as ACTIONED or DISMISSED.")
    @typed_errors
    async def resolve_report(self, info: Info, input: ResolveReportInput) -> ResolveReportResult:
        ctx = info.context
        viewer = ctx.require_viewer()
        await _require_moderator(info)
        report_id = decode_global_id(input.report_id, "Report", "reportId")
        rec = await resolve_report(ctx.engine, viewer, report_id, input.status.value)
        return ResolveReportSuccess(report=Report.from_record(rec))
