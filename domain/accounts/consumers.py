"""The account lifecycle's outbox consumer."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.accounts.build_export import build_export
from domain.accounts.config import AccountsConfig
from domain.outbox.events import DataExportRequested
from domain.outbox.process import Consumer


def accounts_consumer(
    engine: AsyncEngine,
    config: AccountsConfig,
    public_url: Callable[[str], str] | None = None,
) -> Consumer:
    """The ``accounts`` consumer: DataExportRequested prepares the archive (idempotent)."""

    async def prepare(e: DataExportRequested, _: uuid.UUID) -> None:
        await build_export(engine, e.export_id, keep=config.export_retention, public_url=public_url)

    return {DataExportRequested: prepare}
