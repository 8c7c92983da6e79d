"""The media storage settings: the local upload signing key is strong and never the
tokens' key; production refuses one written in the repository."""

from __future__ import annotations

import secrets

import pytest
from pydantic import ValidationError

from app.settings import Settings

DB = "postgresql://x/y"


def test_the_default_signing_key_is_derived_from_jwt_secret() -> None:
    a = Settings(DATABASE_URL=DB, JWT_SECRET="a" * 40)
    b = Settings(DATABASE_URL=DB, JWT_SECRET="b" * 40)
    assert len(a.media_signing_secret) == 32
    assert a.media_signing_secret != b.media_signing_secret
    assert a.media_signing_secret != b"a" * 40
    own = secrets.token_urlsafe(40)
    assert Settings(DATABASE_URL=DB, MEDIA_SIGNING_KEY=own).media_signing_secret == own.encode()


def test_a_short_signing_key_is_refused() -> None:
    with pytest.raises(ValidationError, match="MEDIA_SIGNING_KEY must be at least 32 bytes"):
        Settings(DATABASE_URL=DB, MEDIA_SIGNING_KEY="x" * 31)


def test_production_refuses_a_signing_key_written_in_the_repository() -> None:
    written = "roost-development-secret-change-me-0123456789"  # app/settings.py has it
    with pytest.raises(ValidationError, match="its own MEDIA_SIGNING_KEY"):
        Settings(
            DATABASE_URL=DB,
            ROOST_ENV="production",
            JWT_SECRET=secrets.token_urlsafe(48),
            MEDIA_SIGNING_KEY=written,
        )
    ok = Settings(
        DATABASE_URL=DB,
        ROOST_ENV="production",
        JWT_SECRET=secrets.token_urlsafe(48),
        MEDIA_SIGNING_KEY=secrets.token_urlsafe(48),
    )
    assert len(ok.media_signing_secret) >= 32


def test_media_defaults(tmp_path) -> None:
    s = Settings(DATABASE_URL=DB, ROOST_DATA_DIR=tmp_path, HOST="0.0.0.0", PORT=8123)
    assert s.media_root == tmp_path / "media"
    assert s.api_origin == "http://127.0.0.1:8123"
    behind = Settings(DATABASE_URL=DB, PUBLIC_BASE_URL="https://api.example.org/")
    assert behind.api_origin == "https://api.example.org"
