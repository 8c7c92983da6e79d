"""Inputs of reportPost/reportUser and of the moderators' mutations."""

from __future__ import annotations

import strawberry

from schema.moderation.types import ReportReason, ReportResolution


@strawberry.input(description="What to report (a Post id or a User id), why, and details.")
class ReportInput:
    id: strawberry.ID
    reason: ReportReason
    note: str = strawberry.field(default="", description="Up to 1,000 Unicode code points.")


@strawberry.input
class BanUserInput:
    user_id: strawberry.ID = strawberry.field(description="A User global id.")


@strawberry.input
class RemovePostInput:
    post_id: strawberry.ID = strawberry.field(description="A Post global id.")


@strawberry.input
class ResolveReportInput:
    report_id: strawberry.ID = strawberry.field(description="A Report id.")
    status: ReportResolution
