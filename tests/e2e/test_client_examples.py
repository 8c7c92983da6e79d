"""The client examples docs/api/clients.md shows run against a real Roost API process: the
TypeScript one (docs/examples/typescript: fetch + graphql-ws) signs in, queries, tells a
typed error by the shipped type map (schema/possibleTypes.json), posts, and receives a
subscription event. npm installs its packages once into a cache folder
(ROOST_CACHE, default ~/.cache/roost). Skips where node or npm is missing."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from app.print_schema import POSSIBLE_TYPES_FILE
from app.settings import ROOT
from tests.support.media_files import jpeg
from tests.support.polling import PATIENCE_S
from tests.support.users import TEST_PASSWORD
from tests.support.ws import start_api

EXAMPLE = ROOT / "docs" / "examples" / "typescript"
NODE, NPM = shutil.which("node"), shutil.which("npm")
CACHE = Path(os.environ.get("ROOST_CACHE", Path.home() / ".cache" / "roost"))


def test_the_guide_shows_the_client_as_tested() -> None:
    guide = (ROOT / "docs" / "api" / "clients.md").read_text()
    code = (EXAMPLE / "client.ts").read_text().strip()
    assert f"```ts\n{code}\n```" in guide, "docs/api/clients.md's client differs from client.ts"


def test_the_clients_default_type_map_is_the_committed_one() -> None:
    """Run from docs/examples/typescript (``node dist/client.js``), the client reads
    schema/possibleTypes.json without ROOST_TYPE_MAP."""
    code = (EXAMPLE / "client.ts").read_text()
    (relative,) = re.findall(r'new URL\("([^"]+)", import\.meta\.url\)', code)
    assert (EXAMPLE / "dist" / relative).resolve() == POSSIBLE_TYPES_FILE.resolve()


@pytest.fixture(scope="module")
def built_client() -> Path:
    """The example compiled in a cache folder keyed by its package.json."""
    if NODE is None or NPM is None:
        pytest.skip("node/npm are not installed: the TypeScript client example needs them")
    key = hashlib.sha256((EXAMPLE / "package.json").read_bytes()).hexdigest()[:12]
    folder = CACHE / f"ts-client-{key}"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "tsconfig.json", "client.ts"):
        shutil.copy(EXAMPLE / name, folder / name)
    if not (folder / "node_modules" / ".bin" / "tsc").exists():
        subprocess.run(
            [NPM, "install", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            check=True,
            timeout=300,
        )
    subprocess.run([str(folder / "node_modules" / ".bin" / "tsc")], cwd=folder, check=True)
    return folder / "dist" / "client.js"


async def test_typescript_client_against_a_real_server(
    built_client, settings, make_users, worker, tmp_path
) -> None:
    (user,) = await make_users(1)
    photo = jpeg(tmp_path / "photo.jpg", 1600, 1200)
    api = await asyncio.to_thread(
        start_api,
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "METRICS_PORT": "0",
            "DB_POOL_SIZE": "3",  # the test server's max_connections is shared
            "DB_MAX_OVERFLOW": "4",
            "MEDIA_DIR": str(settings.media_dir),  # the worker's
        },
    )
    try:
        run = await asyncio.to_thread(
            subprocess.run,
            [NODE, str(built_client)],
            env={
                **os.environ,
                "ROOST_URL": api.http,
                "ROOST_USERNAME": user.username,
                "ROOST_PASSWORD": TEST_PASSWORD,
                "ROOST_PHOTO": str(photo),
                "ROOST_TYPE_MAP": str(POSSIBLE_TYPES_FILE),  # the cache folder is elsewhere
            },
            capture_output=True,
            text=True,
            timeout=5 * PATIENCE_S,  # node's start and the client's run, on a loaded machine
        )
    finally:
        api.stop()
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines[0] == {"viewer": {"username": user.username, "followingCount": 0}}
    # told an Error by the type map (the client fails on a member the map does not list)
    assert lines[1] == {
        "typedError": {"__typename": "CannotFollowSelfError", "code": "CANNOT_FOLLOW_SELF"}
    }
    event = lines[2]["event"]
    assert event["likeCount"] in (0, 1) and event["commentCount"] == 0
    photo = lines[3]["photo"]
    assert (photo["created"], photo["notified"], photo["state"]) == (
        "PROCESSING",
        "POST_PUBLISHED",
        "PUBLISHED",
    )
    assert {"thumbnail", "feed", "full"} <= set(photo["variants"])
    assert photo["fetched"][0] == 200 and photo["fetched"][1] in ("image/webp", "image/jpeg")
