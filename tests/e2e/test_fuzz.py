"""Schemathesis's GraphQL mode against a real API process.

``make fuzz`` runs this (pytest ``-m fuzz``; CI runs it from .ci/run); ``make test``
leaves it out. Schemathesis is installed with pip into its own virtualenv in a cache
folder (once per version), not into Roost's. It fuzzes every root field anonymously,
then signs up a user and fuzzes them as that user (``logOut`` aside, which would end the
session it fuzzes with), with the check ``not_a_server_error``: a 5xx, or an error that is not the
client's (one without a client code such as ``BAD_USER_INPUT`` at a field). It must
find none. ``FUZZ_EXAMPLES`` bounds the examples per root field (default 10).
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

from tests.support.ws import start_api

pytestmark = pytest.mark.fuzz

SCHEMATHESIS = "schemathesis==4.32.5"
SIGN_UP = """mutation($i: SignUpInput!) { signUp(input: $i) {
  ... on SignUpSuccess { accessToken } ... on Error { code message } } }"""


def _schemathesis() -> Path:
    """The ``st`` command of a virtualenv holding SCHEMATHESIS (created on first use)."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    venv = cache / "roost" / SCHEMATHESIS.replace("==", "-")
    st = venv / "bin" / "st"
    if not st.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", SCHEMATHESIS],
            check=True,
            timeout=600,
        )
    return st


async def test_schemathesis_finds_no_server_error(settings, tmp_path):
    st = await asyncio.to_thread(_schemathesis)
    api = start_api(
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "WORKER_METRICS_PORT": "0",
            "DB_POOL_SIZE": "3",
            "DB_MAX_OVERFLOW": "3",
        }
    )
    try:
        name = f"fuzz_{uuid.uuid4().hex[:12]}"
        async with httpx.AsyncClient(base_url=api.http, timeout=30) as c:
            resp = await c.post(
                "/graphql",
                json={
                    "query": SIGN_UP,
                    "variables": {
                        "i": {
                            "username": name,
                            "email": f"{name}@example.org",
                            "password": "fuzzing-password-0",
                            "displayName": "Fuzz",
                        }
                    },
                },
            )
        token = resp.json()["data"]["signUp"]["accessToken"]
        # Anonymous (the command of the issue, every root field), then signed in.
        # Fields for signed-in viewers only answer anonymous ones UNAUTHENTICATED at the
        # field, a code schemathesis does not count as the client's: the signed-in run
        # fuzzes them (anonymous mutations are refused with a 401 before execution).
        signed_in_only = ["Query.explore", "Query.trendingHashtags"]
        anonymous = await _fuzz(
            st, api.http, tmp_path, [a for n in signed_in_only for a in ("--exclude-name", n)]
        )
        signed_in = await _fuzz(
            st,
            api.http,
            tmp_path,
            ["--exclude-name", "Mutation.logOut", "-H", f"Authorization: Bearer {token}"],
        )
    finally:
        api.stop()
    for returncode, report in (anonymous, signed_in):
        _assert_clean(returncode, report)


async def _fuzz(st: Path, base: str, folder: Path, extra: list[str]) -> tuple[int, str]:
    """Run ``st run`` on the API's /graphql; its exit code and report."""
    proc = await asyncio.create_subprocess_exec(
        str(st),
        "run",
        f"{base}/graphql",
        "--checks",
        "not_a_server_error",
        "--max-examples",
        os.environ.get("FUZZ_EXAMPLES", "10"),
        "--seed",
        os.environ.get("FUZZ_SEED", "1"),
        "--workers",
        "2",
        "--no-color",
        "--generation-database",
        "none",
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        cwd=folder,  # schemathesis writes its .schemathesis folder there
    )
    out, _ = await asyncio.wait_for(proc.communicate(), 900)
    return proc.returncode, out.decode(errors="replace")


def _assert_clean(returncode: int | None, report: str) -> None:
    summary = report[report.rfind("SUMMARY") :]
    print(summary)
    assert returncode == 0, report[-6000:]
    counts = re.search(r"(\d+) generated, (\d+) passed", summary)
    assert counts is not None and counts[1] == counts[2], summary  # every case passed
    assert "failure" not in summary.lower(), summary
