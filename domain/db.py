"""Shared table metadata, UUIDv7 ids (docs/design.md "Data") and the UTC clock."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any, TypeAlias

from sqlalchemy import MetaData, Row
from uuid_utils.compat import uuid7

#: A result row of any shape (what ``text()`` statements return), for row mappers.
AnyRow: TypeAlias = Row[*tuple[Any, ...]]


#: One MetaData for every table; Alembic compares it with the migrations.
metadata = MetaData(
    naming_convention={
        "ix": "%(table_name)s_%(column_0_N_name)s_idx",
        "uq": "%(table_name)s_%(column_0_N_name)s_key",
        "ck": "%(table_name)s_%(constraint_name)s_check",
        "fk": "%(table_name)s_%(column_0_name)s_fkey",
        "pk": "%(table_name)s_pkey",
    }
)


def new_id() -> uuid.UUID:
    """Return a fresh UUIDv7 (RFC 9562): 48-bit millisecond timestamp, then random bits."""
    return uuid7()


def utcnow() -> dt.datetime:
    """Return the current time as an aware UTC datetime (microsecond precision)."""
    return dt.datetime.now(dt.UTC)
