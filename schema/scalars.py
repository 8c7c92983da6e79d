"""Scalar overrides: timestamps as RFC 3339 in UTC with microseconds (docs/design.md)."""

from __future__ import annotations

import datetime as dt

import strawberry
from strawberry.types.scalar import ScalarDefinition


def serialize_datetime(value: dt.datetime) -> str:
    """Return e.g. ``2026-11-29T22:17:01.000000Z`` (always UTC, always 6 fraction digits)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.UTC)
    return value.astimezone(dt.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_datetime(value: str) -> dt.datetime:
    """Parse an RFC 3339 timestamp; a value without an offset is taken as UTC."""
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)


DateTime = strawberry.scalar(
    name="DateTime",
    description="An RFC 3339 timestamp in UTC with microseconds, e.g. 2026-11-29T22:17:01.000000Z.",
    serialize=serialize_datetime,
    parse_value=parse_datetime,
)

#: For ``StrawberryConfig(scalar_map=...)``: every ``datetime`` field uses :data:`DateTime`.
SCALAR_MAP: dict[object, ScalarDefinition] = {dt.datetime: DateTime}
