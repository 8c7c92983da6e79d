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


def test_every_job_keeps_within_the_job_timeout_so_killed_jobs_retry_soon(settings):
    """arq keeps a SIGKILLed worker's jobs from other workers for the longest limit of
    any of its functions + 10 s: one cron with a long limit (the search-rank refresh had
    300 s) delays every fan-out retry by as much."""
    options = worker_options(settings)
    limits = [f.timeout_s for f in options["functions"] if not isinstance(f, str)]
    limits += [c.timeout_s for c in options["cron_jobs"]]
    assert all(t is None or t <= settings.job_timeout_s for t in limits), limits
