"""Alembic environment and revisions: the only place DDL lives."""
