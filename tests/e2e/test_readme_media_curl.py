"""docs/api/media.md "Media"'s curl block, run as it is written (bash, curl, jq) against a real API
process and the run's worker: login, reserve, send the bytes, create the post, wait for
it to publish, fetch a variant. Only the address, the account and the file change.
Skips where bash, curl or jq is missing."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess

import pytest

from app.settings import ROOT
from tests.support.media_files import jpeg
from tests.support.polling import PATIENCE_S
from tests.support.users import TEST_PASSWORD
from tests.support.ws import start_api


def readme_block() -> str:
    guide = (ROOT / "docs" / "api" / "media.md").read_text()
    found = re.search(r"The whole flow with curl.*?```sh\n(.*?)```", guide, re.S)
    assert found, "docs/api/media.md has no curl block of the media flow"
    return found.group(1)


@pytest.mark.skipif(
    not all(shutil.which(t) for t in ("bash", "curl", "jq")), reason="needs bash, curl, jq"
)
async def test_the_readme_curl_flow_publishes_a_photo(settings, make_users, worker, tmp_path):
    (user,) = await make_users(1)
    jpeg(tmp_path / "photo.jpg", 1200, 900)
    api = await asyncio.to_thread(
        start_api,
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "DB_POOL_SIZE": "3",
            "DB_MAX_OVERFLOW": "4",
            "MEDIA_DIR": str(settings.media_dir),
        },
    )
    script = (
        readme_block()
        .replace("http://127.0.0.1:8000", api.http)
        .replace('"sd1"', f'"{user.username}"')
        .replace('"roost-dev-password"', f'"{TEST_PASSWORD}"')
    )
    try:
        run = await asyncio.to_thread(
            subprocess.run,
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=3 * PATIENCE_S,
        )
    finally:
        api.stop()
    assert run.returncode == 0, (run.stdout, run.stderr)
    assert '"key":' in run.stdout  # the upload's 201 body
    assert '"state": "PUBLISHED"' in run.stdout
    assert re.search(r"^200 image/(webp|jpeg)$", run.stdout, re.M), run.stdout
    assert (tmp_path / "feed").stat().st_size > 0
