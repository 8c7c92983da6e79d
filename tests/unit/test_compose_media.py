"""docker-compose.yml's media wiring: MinIO, the one-shot bucket set-up, and the S3
settings of every API and worker service naming the buckets the set-up makes."""

from __future__ import annotations

import re

import pytest
import yaml
from pydantic import ValidationError

from app.settings import ROOT, Settings

COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]


def fallback(value: str) -> str:
    """The default of a ``${NAME:-default}`` value (the value itself otherwise)."""
    m = re.fullmatch(r"\$\{\w+:-(.*)\}", value)
    return m.group(1) if m else value


@pytest.mark.parametrize("name", ["api", "worker", "api-scale", "worker-scale"])
def test_roost_services_keep_media_on_minio(name: str) -> None:
    env = SERVICES[name]["environment"]
    assert env["MEDIA_STORAGE"] == "s3"
    assert env["S3_ENDPOINT_URL"] == "http://minio:9000"
    assert "minio-setup" in SERVICES[name]["depends_on"]
    setup = SERVICES["minio-setup"]["command"][0]
    for bucket in (env["S3_QUARANTINE_BUCKET"], env["S3_DELIVERY_BUCKET"]):
        assert f"roost/{bucket}" in setup
    assert f"anonymous set download roost/{env['S3_DELIVERY_BUCKET']}" in setup
    assert f"roost/{env['S3_QUARANTINE_BUCKET']}" not in setup.split("anonymous")[1].split("\n")[0]
    assert fallback(env["MEDIA_PUBLIC_BASE_URL"]).endswith("/" + env["S3_DELIVERY_BUCKET"])
    # The services' key is MinIO's root key.
    minio = SERVICES["minio"]["environment"]
    assert fallback(minio["MINIO_ROOT_PASSWORD"]) == fallback(env["S3_SECRET_ACCESS_KEY"])
    assert fallback(minio["MINIO_ROOT_USER"]) == fallback(env["S3_ACCESS_KEY_ID"])


def test_the_set_up_waits_for_a_healthy_minio() -> None:
    assert SERVICES["minio-setup"]["depends_on"]["minio"]["condition"] == "service_healthy"
    assert SERVICES["minio-setup"]["restart"] == "no"
    assert "miniodata" in COMPOSE["volumes"]


def test_production_refuses_the_try_out_key() -> None:
    env = SERVICES["api"]["environment"]
    with pytest.raises(ValidationError, match="its own S3_SECRET_ACCESS_KEY"):
        Settings(
            DATABASE_URL="postgresql://x/y",
            ROOST_ENV="production",
            JWT_SECRET="p" * 48,
            MEDIA_STORAGE="s3",
            S3_QUARANTINE_BUCKET=env["S3_QUARANTINE_BUCKET"],
            S3_SECRET_ACCESS_KEY=fallback(env["S3_SECRET_ACCESS_KEY"]),
        )
