"""Run Alembic migrations programmatically (``roost migrate``)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config

MIGRATIONS = Path(__file__).resolve().parent.parent / "migrations"


def alembic_config(database_url: str) -> Config:
    """Return an Alembic Config pointing at ``migrations/`` and ``database_url``."""
    cfg = Config(str(MIGRATIONS / "alembic.ini"))
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Apply migrations up to ``revision`` (blocking; runs its own event loop)."""
    command.upgrade(alembic_config(database_url), revision)
