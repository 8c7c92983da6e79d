"""The ``DataExport`` type: an archive of a user's data, and the latest one of a user."""

from __future__ import annotations

import datetime as dt
import uuid
from enum import Enum
from typing import Self

import strawberry
from strawberry import relay

from domain.accounts.export_links import ExportLinkSigner
from domain.accounts.exports import ExportRecord, exports_of_user, latest_export
from schema.context import Info
from schema.ids import parse_node_ids


@strawberry.enum(description="Where a data export is.")
class DataExportStatus(Enum):
    PENDING = "pending"
    READY = "ready"


@strawberry.type(
    description="An archive of your data (profile, posts, comments, likes, follows both "
    "ways, blocks, mutes, notifications) as gzip-compressed JSON, prepared by the worker. "
    "`node(id:)` gives it to its owner only, until it expires."
)
class DataExport(relay.Node):
    pk: relay.NodeID[str]
    status: DataExportStatus
    requested_at: dt.datetime
    ready_at: dt.datetime | None
    expires_at: dt.datetime | None = strawberry.field(
        description="When the archive is deleted (null while it is being prepared)."
    )
    size_bytes: int | None = strawberry.field(description="Size of the gzip archive.")
    record: strawberry.Private[ExportRecord]

    @classmethod
    def from_record(cls, rec: ExportRecord) -> Self:
        """Build the GraphQL object from a domain record."""
        return cls(
            pk=str(rec.id),
            status=DataExportStatus(rec.status),
            requested_at=rec.requested_at,
            ready_at=rec.ready_at,
            expires_at=rec.expires_at,
            size_bytes=rec.size_bytes,
            record=rec,
        )

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: list[str], required: bool = False
    ) -> list[Self | None]:
        """Resolve ``node``/``nodes``: the viewer's own exports that have not expired
        (anyone else's, an expired one, or any when anonymous: null)."""
        ctx = info.context
        if ctx.viewer_id is None:
            return [None] * len(node_ids)
        ids = parse_node_ids(node_ids)
        async with ctx.engine.connect() as conn:
            found = await exports_of_user(conn, ctx.viewer_id, [i for i in ids if i])
        return [cls.from_record(found[i]) if i in found else None for i in ids]

    @strawberry.field(
        description="A link to download the archive (GET, no token needed), valid for 15 "
        "minutes from this read; null until the archive is ready. Read the field again "
        "for a fresh link."
    )
    def url(self, info: Info) -> str | None:
        if self.record.status != "ready":
            return None
        ctx = info.context
        path = ExportLinkSigner(ctx.tokens.secret).path(
            self.record.id, ttl_s=ctx.accounts.export_link_ttl.total_seconds()
        )
        base = ctx.accounts.public_base_url
        if base is None and ctx.request is not None:
            base = str(ctx.request.base_url)
        return (base or "").rstrip("/") + path


async def latest_data_export(info: Info, user_id: uuid.UUID) -> DataExport | None:
    """``viewer.dataExport``: the user's latest export that has not expired (None if
    there is none)."""
    async with info.context.engine.connect() as conn:
        rec = await latest_export(conn, user_id)
    return DataExport.from_record(rec) if rec else None
