"""Reports a test files stay out of the moderators' queue of later tests (the queue is
shared by the test database: its oldest open reports come first)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine


@contextlib.asynccontextmanager
async def reports_dismissed_after(engine: AsyncEngine) -> AsyncIterator[None]:
    """Dismiss, on exit, the open reports filed inside the block."""
    async with engine.connect() as conn:
        start = await conn.scalar(text("SELECT clock_timestamp()"))
    try:
        yield
    finally:
        async with engine.begin() as conn:
            await conn.execute(
                text(
                    "UPDATE reports SET status = 'dismissed', resolved_at = now()"
                    " WHERE status = 'open' AND created_at >= :start"
                ),
                {"start": start},
            )
