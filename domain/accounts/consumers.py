"""The outbox topics the account lifecycle consumes, wired to their use cases."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from sqlalchemy.ext.asyncio import AsyncEngine

from domain.accounts.build_export import build_export
from domain.accounts.config import AccountsConfig
from domain.accounts.request_export import EXPORT_REQUESTED
from domain.outbox.process import Handler


def account_handlers(engine: AsyncEngine, config: AccountsConfig) -> dict[str, Handler]:
    """``{topic: handler}``: ``data_export.requested`` prepares the archive (idempotent:
    a prepared one is left alone)."""

    async def prepare(p: Mapping[str, Any]) -> None:
        await build_export(engine, uuid.UUID(p["export_id"]), keep=config.export_retention)

    return {EXPORT_REQUESTED: prepare}
