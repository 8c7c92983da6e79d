"""Check the follow counters against ``count(*)`` of live follows (docs/design.md "Data")."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.counters.verify import Drift, VerifyReport, verify_counts

__all__ = ["Drift", "VerifyReport", "verify_follow_counts"]


async def verify_follow_counts(engine: AsyncEngine) -> VerifyReport:
    """Compare every followers/following counter with ``count(*)`` in one snapshot."""
    return await verify_counts(engine, ["followers", "following"])
