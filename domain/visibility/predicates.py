"""The shared row invariants, each one name: *live* (not soft-deleted) and *active*;
tests/unit/test_sql_predicates.py refuses retyping them."""

from __future__ import annotations

from sqlalchemy import ColumnElement, FromClause

from domain.visibility.facts import ACTIVE


def _column(alias: str, name: str) -> str:
    return f"{alias}.{name}" if alias else name


def is_live(alias: str = "") -> str:
    """SQL: the row (alias ``alias``) is not soft-deleted."""
    return f"{_column(alias, 'deleted_at')} IS NULL"


def is_active(alias: str = "") -> str:
    """SQL: the account (alias ``alias``) is active."""
    return f"{_column(alias, 'status')} = '{ACTIVE}'"


def active_clause(accounts: FromClause) -> ColumnElement[bool]:
    """Core: :func:`is_active` for ``accounts`` (``users`` or an alias of it)."""
    return accounts.c.status == ACTIVE
