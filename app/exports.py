"""``GET /exports/<id>?expires=…&signature=…``: a data export's download, streamed from
PostgreSQL slice by slice (docs/api/account-lifecycle.md)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from app.settings import Settings
from domain.accounts.export_links import ExportLinkSigner
from domain.accounts.exports import archive_chunks, downloadable_export

#: Answers that are not the archive: a JSON body ``{"error": {"code", "message"}}``.
_REFUSALS = {
    "bad": (400, "BAD_REQUEST", "The link is malformed."),
    "forged": (403, "FORBIDDEN", "The link's signature is not valid."),
    "expired": (410, "LINK_EXPIRED", "The link has expired: read dataExport.url again."),
    "missing": (404, "NOT_FOUND", "No archive is ready at this link (expired or replaced)."),
}


def _refuse(why: str) -> Response:
    status, code, message = _REFUSALS[why]
    return JSONResponse(
        {"error": {"code": code, "message": message}},
        status_code=status,
        headers={"Cache-Control": "no-store"},
    )


def export_download(
    engine: AsyncEngine, settings: Settings
) -> Callable[[Request], Awaitable[Response]]:
    """Stream a ready archive as an ``application/gzip`` attachment once its link checks
    (403 forged, 410 expired, 404 no archive); the link is the capability, no token."""
    signer = ExportLinkSigner(settings.jwt_secret)

    async def download(request: Request) -> Response:
        try:
            export_id = uuid.UUID(request.path_params["export_id"])
            expires = int(request.query_params["expires"])
            signature = request.query_params["signature"]
        except (KeyError, ValueError):
            return _refuse("bad")
        refused = signer.check(export_id, expires, signature)
        if refused is not None:
            return _refuse(refused)
        record = await downloadable_export(engine, export_id)
        if record is None:
            return _refuse("missing")
        day = (record.ready_at or record.requested_at).date().isoformat()
        return StreamingResponse(
            archive_chunks(engine, export_id),
            media_type="application/gzip",
            headers={
                "Content-Length": str(record.size_bytes or 0),
                "Content-Disposition": f'attachment; filename="roost-data-{day}.json.gz"',
                "Cache-Control": "private, no-store",
            },
        )

    return download
