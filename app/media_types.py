"""Response media types of GraphQL over HTTP (the GraphQL-over-HTTP spec, "Accept" and
"Status Codes"; docs/api/limits.md "HTTP guards").

A client that accepts ``application/graphql-response+json`` gets it, with statuses that
say what happened: a request that failed before execution (a document that does not
parse or validate, variables that do not fit their types) is a 400 without ``data``.
``application/json`` (also for ``*/*``, ``application/*`` and no ``Accept`` at all) keeps
the legacy statuses: 200 for such failures, which old clients expect. The first
acceptable entry of ``Accept`` wins (weights are not read, as the spec's reference
server does); an ``Accept`` with none of them is a 406.
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
    """The media type to answer a request whose ``Accept`` header is ``accept``:
    :data:`GRAPHQL_RESPONSE_JSON`, :data:`JSON`, or None when it accepts neither (in
    UTF-8). No header means ``*/*``."""
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
    """Whether a result is a request error: it failed before execution started (no
    data, and no error raised at a field), so it carries no ``data`` entry."""
    return data is None and bool(errors) and all(e.path is None for e in errors or ())
