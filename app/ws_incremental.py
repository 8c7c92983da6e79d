"""Results over WebSocket, for both subscription protocols, incremental delivery
included (docs/api/http.md "Incremental delivery"): each part of a ``@defer``/``@stream``
result is a ``next`` (graphql-transport-ws) or ``data`` (graphql-ws) message carrying
the payload of HTTP's ``multipart/mixed`` part, then ``complete``.
"""

from __future__ import annotations

from typing import Any

from graphql import InitialIncrementalExecutionResult, SubsequentIncrementalExecutionResult
from graphql.execution import PendingResult


class ResultPayloads:
    """The message payloads of one operation's results, in order: a later part's
    ``incremental`` entries name the ``path`` and ``label`` of the pending result an
    earlier part announced (as over HTTP)."""

    def __init__(self) -> None:
        self._pending: dict[str, PendingResult] = {}

    def payload(self, result: Any) -> dict[str, Any]:
        """The payload of ``result``: an execution result ({data, errors?,
        extensions?}) or an incremental one (initial, or a later part)."""
        if isinstance(result, InitialIncrementalExecutionResult):
            self._remember(result.pending)
            return _without_empty_extensions(dict(result.formatted))
        if isinstance(result, SubsequentIncrementalExecutionResult):
            self._remember(result.pending)
            formatted: dict[str, Any] = dict(result.formatted)
            if "incremental" in formatted:
                formatted["incremental"] = [self._placed(e) for e in formatted["incremental"]]
            return _without_empty_extensions(formatted)
        payload: dict[str, Any] = {"data": result.data}
        if result.errors:
            payload["errors"] = [error.formatted for error in result.errors]
        if result.extensions:
            payload["extensions"] = result.extensions
        return payload

    def _placed(self, entry: Any) -> dict[str, Any]:
        pending = self._pending[entry["id"]]
        return {**entry, "path": pending.path, "label": pending.label}

    def _remember(self, pending: list[PendingResult] | None) -> None:
        for entry in pending or ():
            self._pending[entry.id] = entry


def _without_empty_extensions(payload: dict[str, Any]) -> dict[str, Any]:
    if not payload.get("extensions"):
        payload.pop("extensions", None)
    return payload
