"""Response media types of GraphQL over HTTP (docs/api/limits.md "HTTP guards", Media
types): the first acceptable entry of ``Accept`` wins; ``application/graphql-response+json``
answers a request that failed before execution with 400, ``application/json`` with the
legacy 200; neither acceptable is a 406.
"""

from __future__ import annotations

from typing import Any

from graphql import GraphQLError

GRAPHQL_RESPONSE_JSON = "application/graphql-response+json"
JSON = "application/json"
#: The ``Content-Type`` of each media type Roost answers with.
CONTENT_TYPES = {
    GRAPHQL_RESPONSE_JSON: "application/graphql-response+json; charset=utf-8",
    JSON: "application/json",
}
#: What a 406 offers (its ``Accept`` header).
OFFERED = "application/graphql-response+json; charset=utf-8, application/json; charset=utf-8"

_JSON_ALIASES = frozenset({JSON, "application/*", "*/*"})
_UTF8 = frozenset({"utf-8", "utf8"})


def negotiate(accept: str | None) -> str | None:
    """The media type answering ``accept`` (none: ``*/*``): :data:`GRAPHQL_RESPONSE_JSON`,
    :data:`JSON`, or None when it accepts neither in UTF-8."""
    if accept is None or not accept.strip():
        return JSON
    for entry in accept.lower().split(","):
        media_type, *params = (part.strip() for part in entry.split(";"))
        charset = next((p[8:].strip('"') for p in params if p.startswith("charset=")), "utf-8")
        if charset not in _UTF8:
            continue
        if media_type == GRAPHQL_RESPONSE_JSON:
            return GRAPHQL_RESPONSE_JSON
        if media_type in _JSON_ALIASES:
            return JSON
    return None


def is_request_error(data: Any, errors: list[GraphQLError] | None) -> bool:
    """Whether a result failed before execution (a request error: no ``data`` entry)."""
    return data is None and bool(errors) and all(e.path is None for e in errors or ())
