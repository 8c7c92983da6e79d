"""The graph loader keeps people search's ranking signal (``user_search.followers``) in
step with the follower counters, so the worker's first rank refresh after a load (or a
first ``make run``) finds nothing to write and finishes well within its job's limit."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from sqlalchemy import text

from app.database import create_engine
from domain.search.ranks import refresh_search_ranks
from tests.support.servers import throwaway_database
from tools.load_graph import load_graph
from workers.settings import worker_options

HASH = "$argon2id$v=19$m=65536,t=3,p=4$bG9hZGVydGVzdA$bG9hZGVydGVzdGhhc2g"


@pytest.fixture
def own_db():
    with throwaway_database() as url:
        yield url


async def test_the_first_refresh_after_a_load_writes_nothing(own_db, tmp_path: Path):
    # Node 1 followed by 2..9, node 2 by 3..5, the rest by nobody.
    edges = [(f, 1) for f in range(2, 10)] + [(f, 2) for f in range(3, 6)] + [(1, 3)]
    path = tmp_path / "graph.txt.gz"
    path.write_bytes(gzip.compress("".join(f"{a}\t{b}\n" for a, b in edges).encode()))
    engine = create_engine(own_db, pool_size=2, max_overflow=0)
    try:
        await load_graph(engine, path, password_hash=HASH)
        async with engine.connect() as conn:
            ranked = dict(
                (
                    await conn.execute(
                        text(
                            "SELECT u.username, s.followers FROM user_search s"
                            " JOIN users u ON u.id = s.user_id"
                        )
                    )
                ).all()
            )
        assert ranked["sd1"] == 8 and ranked["sd2"] == 3 and ranked["sd3"] == 1
        assert ranked["sd9"] == 0
        assert await refresh_search_ranks(engine) == 0
        # A second load of the same file adds nothing to the signal either.
        await load_graph(engine, path, password_hash=HASH)
        assert await refresh_search_ranks(engine) == 0
    finally:
        await engine.dispose()


def test_the_refresh_cron_has_its_own_time_limit(settings):
    (job,) = [
        c
        for c in worker_options(settings)["cron_jobs"]
        if c.name.endswith("refresh_search_ranks_job")
    ]
    assert job.timeout_s is not None and job.timeout_s >= 60 > settings.job_timeout_s
