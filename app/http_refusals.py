"""HTTP refusals: a request that fails as a whole gets one JSON GraphQL error (no
``data``) with its HTTP status (docs/api/http.md "HTTP")."""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from app.operation import unavailable_error


def graphql_error_response(
    message: str,
    code: str,
    status: int,
    *,
    headers: dict[str, str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> Response:
    """A JSON GraphQL response with one request error and no ``data`` (GraphQL spec:
    a request that fails as a whole)."""
    body = {"errors": [{"message": message, "extensions": {"code": code, **(extensions or {})}}]}
    return Response(
        json.dumps(body, separators=(",", ":")),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


class RequestRefused(Exception):
    """Ends an HTTP request early with ``response`` (an error, or a replayed response)."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response

    @classmethod
    def error(cls, message: str, code: str, status: int, **kwargs: Any) -> RequestRefused:
        """A refusal answered by :func:`graphql_error_response`."""
        return cls(graphql_error_response(message, code, status, **kwargs))


def unavailable_refusal(dependency: str) -> RequestRefused:
    """The 503 ``SERVICE_UNAVAILABLE`` refusal (``Retry-After``): ``dependency`` is down."""
    message, extensions = unavailable_error(dependency)
    return RequestRefused.error(
        message,
        "SERVICE_UNAVAILABLE",
        503,
        headers={"Retry-After": str(extensions["retryAfter"])},
        extensions={k: v for k, v in extensions.items() if k != "code"},
    )
