"""Relay global IDs: ``base64("<TypeName>:<uuid>")`` (GraphQL Cursor Connections / Global
Object Identification specs), decoded into domain UUIDs."""

from __future__ import annotations

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


def decode_global_id(value: str, expected_type: str, field: str) -> uuid.UUID:
    """Return the UUID inside a global id of ``expected_type``.

    Raises ValidationError(field) for anything else: not base64, no ``Type:``
    prefix, another type, or a payload that is not a UUID.
    """
    try:
        gid = relay.GlobalID.from_id(value)
        if gid.type_name != expected_type:
            raise ValueError(gid.type_name)
        return uuid.UUID(gid.node_id)
    except (ValueError, TypeError, AttributeError):  # GlobalIDValueError is a ValueError
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
