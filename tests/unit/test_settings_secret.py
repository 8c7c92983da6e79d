"""Production refuses a JWT secret that is short or written in the repository, and the
compose file has no fallback for it."""

from __future__ import annotations

import re
import secrets

import pytest
from pydantic import ValidationError

from app.settings import ROOT, Settings, secret_in_repository

#: The secret the compose file used to fall back to (a clone of the repo knows it).
OLD_COMPOSE_SECRET = "compose-local-secret-not-for-production-" + "0123456789"
BENCH_SECRET = "bench-subscriptions-secret-" + "0123456789abcdef"


def production(secret: str) -> Settings:
    return Settings(ROOST_ENV="production", JWT_SECRET=secret, DATABASE_URL="postgresql://x/y")


@pytest.mark.parametrize("secret", [BENCH_SECRET, "roost-development-secret-change-me-0123456789"])
def test_production_refuses_a_secret_written_in_the_repository(secret):
    assert secret_in_repository(secret)
    with pytest.raises(ValidationError, match="written in Roost's repository"):
        production(secret)


def test_production_refuses_the_old_compose_fallback(tmp_path):
    # As in a clone of the old main, where docker-compose.yml carried it.
    (tmp_path / "docker-compose.yml").write_text(
        f"JWT_SECRET: ${{JWT_SECRET:-{OLD_COMPOSE_SECRET}}}\n"
    )
    assert secret_in_repository(OLD_COMPOSE_SECRET, tmp_path)
    assert not secret_in_repository(secrets.token_urlsafe(40), tmp_path)


@pytest.mark.parametrize("secret", ["a" * 31, "é" * 15 + "a"])  # 31 bytes each
def test_secrets_shorter_than_32_bytes_are_refused_everywhere(secret):
    with pytest.raises(ValidationError, match="32 bytes"):
        Settings(JWT_SECRET=secret, DATABASE_URL="postgresql://x/y")
    with pytest.raises(ValidationError, match="32 bytes"):
        production(secret)


def test_production_accepts_its_own_secret():
    secret = secrets.token_urlsafe(48)
    assert production(secret).jwt_secret == secret
    assert production("é" * 16).jwt_secret == "é" * 16  # 32 bytes


def test_compose_has_no_fallback_for_the_secret():
    compose = (ROOT / "docker-compose.yml").read_text()
    (value,) = re.findall(r"^\s*JWT_SECRET:\s*(.+)$", compose, flags=re.MULTILINE)
    assert value.startswith("${JWT_SECRET:?"), value  # required: compose stops without it
    assert ":-" not in value and OLD_COMPOSE_SECRET not in compose
