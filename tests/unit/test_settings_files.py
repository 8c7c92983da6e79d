"""Settings from files (``X_FILE``, as Compose mounts secrets) and DATABASE_PASSWORD put
into the database URLs (app/settings.py)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.settings import Settings


def test_a_setting_file_wins_over_the_variable(tmp_path, monkeypatch):
    secret = tmp_path / "jwt_secret"
    secret.write_text("s" * 40 + "\n")
    monkeypatch.setenv("JWT_SECRET", "e" * 40)
    monkeypatch.setenv("JWT_SECRET_FILE", str(secret))
    assert Settings(DATABASE_URL="postgresql://x@h/db").jwt_secret == "s" * 40


def test_an_unreadable_file_is_a_settings_error(tmp_path, monkeypatch):
    monkeypatch.setenv("JWT_SECRET_FILE", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="JWT_SECRET_FILE="):
        Settings()


def test_the_database_password_goes_into_every_url(tmp_path, monkeypatch):
    password = tmp_path / "postgres_password"
    password.write_text("p@ss/word\n")
    monkeypatch.setenv("DATABASE_PASSWORD_FILE", str(password))
    s = Settings(
        DATABASE_URL="postgresql://roost@postgres:5432/roost",
        DATABASE_REPLICA_URLS="postgresql://roost@r1/roost, postgresql://roost@r2/roost",
    )
    assert s.database_url == "postgresql://roost:p%40ss%2Fword@postgres:5432/roost"
    assert s.database_replica_urls == (
        "postgresql://roost:p%40ss%2Fword@r1/roost,postgresql://roost:p%40ss%2Fword@r2/roost"
    )


def test_without_a_password_the_urls_are_unchanged():
    s = Settings(DATABASE_URL="postgresql://roost:own@h/roost")
    assert s.database_url == "postgresql://roost:own@h/roost"
    with pytest.raises(ValidationError):
        Settings(JWT_SECRET="short")
