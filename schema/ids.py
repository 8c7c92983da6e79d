"""Relay global IDs: ``base64("<TypeName>:<uuid>")`` (GraphQL Cursor Connections / Global
Object Identification specs), decoded into domain UUIDs."""

from __future__ import annotations

import base64
import binascii
import uuid
from collections.abc import Sequence

from graphql import GraphQLError
from strawberry import relay

from domain.errors import ValidationError

#: Most global ids one ``nodes(ids:)`` call takes (docs/api/README.md "The API").
MAX_NODE_IDS = 100


def to_global_id(type_name: str, pk: uuid.UUID) -> str:
    """Return the opaque global id of (``type_name``, ``pk``)."""
    return str(relay.GlobalID(type_name, str(pk)))


def parse_global_id(value: str) -> tuple[str, str]:
    """Return ``(type name, node id)`` of a global id: base64 (standard or URL-safe
    alphabet) of ``<TypeName>:<id>``, with or without its ``=`` padding. Raises
    ValueError for anything else."""
    if not value.isascii():
        raise ValueError(value)
    stripped = value.rstrip("=")
    if len(value) - len(stripped) > 2:
        raise ValueError(value)
    try:
        raw = base64.b64decode(
            stripped + "=" * (-len(stripped) % 4), altchars=b"-_", validate=True
        ).decode("utf-8")
    except (binascii.Error, UnicodeError):
        raise ValueError(value) from None
    type_name, sep, node_id = raw.partition(":")
    if not sep or not type_name or not node_id:
        raise ValueError(value)
    return type_name, node_id


def decode_global_id(value: str, expected_type: str, field: str) -> uuid.UUID:
    """Return the UUID inside a global id of ``expected_type``.

    Raises ValidationError(field) for anything else: not base64, no ``Type:``
    prefix, another type, or a payload that is not a UUID.
    """
    try:
        type_name, node_id = parse_global_id(value)
        if type_name != expected_type:
            raise ValueError(type_name)
        return uuid.UUID(node_id)
    except ValueError:
        raise ValidationError(field, f"'{field}' is not a valid {expected_type} id.") from None


def parse_node_ids(node_ids: list[str]) -> list[uuid.UUID | None]:
    """The UUIDs inside the node ids Strawberry hands ``resolve_nodes`` (None where one
    is not a UUID: such a node resolves to null)."""
    out: list[uuid.UUID | None] = []
    for raw in node_ids:
        try:
            out.append(uuid.UUID(raw))
        except ValueError:
            out.append(None)
    return out


def check_node_ids(ids: Sequence[str]) -> list[str]:
    """Return ``ids`` if there are at most :data:`MAX_NODE_IDS`, else raise a
    ``BAD_USER_INPUT`` GraphQL error (a long list costs a statement parameter per id)."""
    if len(ids) > MAX_NODE_IDS:
        raise GraphQLError(
            f"'ids' takes at most {MAX_NODE_IDS} ids ({len(ids)} given).",
            extensions={"code": "BAD_USER_INPUT"},
        )
    return list(ids)
