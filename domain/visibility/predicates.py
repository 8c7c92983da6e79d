"""The row invariants every read and write shares, each as one name: a follow, post or
comment is *live* until soft-deleted, and an account counts and is seen only while
*active*. Text SQL splices the fragments (``f"... WHERE {is_live('f')}"``), SQLAlchemy Core
uses the clause; tests/unit/test_sql_predicates.py fails when the raw predicate is
retyped anywhere else.
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, FromClause

from domain.visibility.facts import ACTIVE


def _column(alias: str, name: str) -> str:
    return f"{alias}.{name}" if alias else name


def is_live(alias: str = "") -> str:
    """SQL: the follow, post or comment (of table alias ``alias``, or unqualified) is
    live, not soft-deleted."""
    return f"{_column(alias, 'deleted_at')} IS NULL"


def is_active(alias: str = "") -> str:
    """SQL: the account (of table alias ``alias``, or unqualified) is active, the only
    status that is seen and counted (:data:`domain.visibility.facts.ACTIVE`)."""
    return f"{_column(alias, 'status')} = '{ACTIVE}'"


def active_clause(accounts: FromClause) -> ColumnElement[bool]:
    """Core: :func:`is_active` for ``accounts`` (``users`` or an alias of it)."""
    return accounts.c.status == ACTIVE
