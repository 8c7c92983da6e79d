"""Every query of the Grafana "Roost" dashboard (monitoring/grafana/dashboards/roost.json)
returns series from a real Prometheus (Debian's ``prometheus`` package) scraping a
running API process and worker process after some traffic. The check's output (query,
series, first value) is kept in ``.test-output/prometheus/dashboard-queries.txt``.

Skips where Prometheus is not installed (Debian: ``apt-get install prometheus``)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import httpx
import pytest

from app.settings import ROOT
from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port
from tests.support.ws import start_api

PROMETHEUS = shutil.which("prometheus")
pytestmark = pytest.mark.skipif(
    PROMETHEUS is None,
    reason="Prometheus is not installed (Debian: apt-get install prometheus): "
    "the dashboard check needs a real one",
)

DASHBOARD = ROOT / "monitoring" / "grafana" / "dashboards" / "roost.json"
OUTPUT = Path(os.environ.get("ROOST_TEST_OUTPUT", ROOT / ".test-output")) / "prometheus"


def dashboard_queries() -> list[tuple[str, str]]:
    """(panel title, PromQL) of every target of the dashboard."""
    board = json.loads(DASHBOARD.read_text())
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]


def test_the_dashboard_is_provisioned_by_compose() -> None:
    import yaml

    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    grafana = compose["services"]["grafana"]
    assert any("monitoring/grafana/dashboards" in v for v in grafana["volumes"])
    assert json.loads(DASHBOARD.read_text())["title"] == "Roost"
    prom = (ROOT / "monitoring" / "prometheus.yml").read_text()
    assert "api:9100" in prom and "worker:9101" in prom
    api_env = compose["services"]["api"]["environment"]
    worker_env = compose["services"]["worker"]["environment"]
    assert api_env["METRICS_PORT"] == "9100" and worker_env["WORKER_METRICS_PORT"] == "9101"
    assert compose["x-roost"]["environment"]["METRICS_HOST"] == "0.0.0.0"


@pytest.fixture
def processes(settings):
    """A real API process and a real worker process on the test database and Redis,
    with their own job queue and metrics ports."""
    api_port, worker_port = free_port(), free_port()
    env = {
        "DATABASE_URL": settings.database_url,
        "REDIS_URL": settings.redis_url,
        "ARQ_QUEUE": f"roost-test-prom:{uuid.uuid4().hex[:8]}",
        "JWT_SECRET": settings.jwt_secret,
        "RATE_LIMIT_ENABLED": "false",
        "METRICS_HOST": "127.0.0.1",
        "METRICS_PORT": str(api_port),
        "WORKER_METRICS_PORT": str(worker_port),
        "DB_POOL_SIZE": "3",  # the test server's max_connections is shared
        "DB_MAX_OVERFLOW": "4",
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker"],
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        api = start_api(env)
    except Exception:
        worker.terminate()
        worker.wait(10)
        raise
    yield api, api_port, worker_port
    api.stop()
    worker.terminate()
    worker.wait(20)


@pytest.fixture
def prometheus(processes):
    """Prometheus scraping both processes every second; yields its base URL."""
    _, api_port, worker_port = processes
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="roost-prometheus-") as folder:
        config = Path(folder) / "prometheus.yml"
        jobs = {"roost-api": api_port, "roost-worker": worker_port}
        config.write_text(
            "global: {scrape_interval: 1s, evaluation_interval: 1s}\nscrape_configs:\n"
            + "".join(
                f"  - job_name: {job}\n    static_configs: [{{targets: ['127.0.0.1:{port_}']}}]\n"
                for job, port_ in jobs.items()
            )
        )
        proc = subprocess.Popen(
            [
                PROMETHEUS,
                f"--config.file={config}",
                f"--storage.tsdb.path={folder}/data",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            proc.wait(20)


async def query(http: httpx.AsyncClient, base: str, expr: str) -> list[dict]:
    try:
        resp = await http.get(f"{base}/api/v1/query", params={"query": expr})
    except httpx.HTTPError:
        return []
    if resp.status_code != 200:
        return []
    return resp.json()["data"]["result"]


async def until(http, base, expr, within: float = PATIENCE_S) -> list[dict]:
    deadline = time.monotonic() + within
    while True:
        result = await query(http, base, expr)
        if result or time.monotonic() > deadline:
            return result
        await asyncio.sleep(0.25)


FOLLOW = "mutation($u: ID!) { follow(input: { userId: $u }) { __typename } }"
POST = "mutation($c: String!) { createPost(input: { caption: $c }) { __typename } }"
FEED = "query HomeFeed { viewer { feed(first: 5) { edges { node { id } } } } }"


async def test_every_dashboard_query_returns_series(processes, prometheus, make_users) -> None:
    api, _, _ = processes
    reader, author = await make_users(2)
    await api.gql(FOLLOW, {"u": author.gid}, token=reader.token)
    for i in range(3):
        await api.gql(POST, {"c": f"prometheus check {i}"}, token=author.token)
    for _ in range(3):
        await api.gql(FEED, token=reader.token)

    async with httpx.AsyncClient(timeout=PATIENCE_S) as http:
        up = await until(http, prometheus, 'sum(up{job=~"roost-.*"}) == 2')
        assert up, "Prometheus does not see both targets up"
        # Traffic keeps coming (a post fanned out, a feed read) while Prometheus builds
        # up its rate() windows, until every query has series.
        deadline = time.monotonic() + PATIENCE_S
        missing = dashboard_queries()
        n = 3
        while missing and time.monotonic() < deadline:
            await api.gql(POST, {"c": f"prometheus check {n}"}, token=author.token)
            await api.gql(FEED, token=reader.token)
            n += 1
            missing = [(t, e) for t, e in missing if not await query(http, prometheus, e)]
            if missing:
                await asyncio.sleep(0.5)
        lines = []
        for title, expr in dashboard_queries():
            result = await query(http, prometheus, expr)
            value = result[0]["value"][1] if result else "-"
            lines.append(f"{len(result):>3} series  {value:>10.10}  {title}: {expr}")
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "dashboard-queries.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    assert not missing, f"dashboard queries without series: {missing}"
