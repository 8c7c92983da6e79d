"""Relay global IDs: ``base64("<TypeName>:<uuid>")`` (GraphQL Cursor Connections / Global
Object Identification specs), decoded into domain UUIDs."""

from __future__ import annotations

import uuid

from strawberry import relay

from domain.errors import ValidationError


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
