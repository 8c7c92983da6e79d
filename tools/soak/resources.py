"""Memory and connections of the system, before the faults and after the soak."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import psutil
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from tools.soak.audit import Check
from tools.soak.servers import Stack

#: What "back to baseline" allows: growth by this factor plus a constant.
RSS_FACTOR, RSS_PLUS_MB = 1.5, 40.0
FD_FACTOR, FD_PLUS = 1.5, 20
#: Each process keeps up to this many idle connections in its pool (DB_POOL_SIZE).
POOL_SIZE = 10


@dataclass(frozen=True)
class Snapshot:
    rss_mb: dict[str, float]  # role -> resident memory of its processes (MB)
    fds: dict[str, int]  # role -> open file descriptors (sockets included)
    processes: int  # roost processes with a database pool (API servers + worker)
    pg_connections: int  # client backends, the soak's own excluded
    redis_clients: int
    redis_by_role: dict[str, int]  # role -> its connections to Redis
    api_tcp: int  # connections established to the API's port

    def line(self) -> str:
        rss = " ".join(f"{k} {v:.0f} MB" for k, v in self.rss_mb.items())
        fds = " ".join(f"{k} {v}" for k, v in self.fds.items())
        redis = " ".join(f"{k} {v}" for k, v in self.redis_by_role.items())
        return (
            f"RSS {rss}; fds {fds}; PostgreSQL connections {self.pg_connections};"
            f" Redis clients {self.redis_clients} ({redis});"
            f" API TCP connections {self.api_tcp}"
        )


async def snapshot(stack: Stack, engine: AsyncEngine) -> Snapshot:
    rss: dict[str, float] = {}
    fds: dict[str, int] = {}
    redis_by_role: dict[str, int] = {}
    count = 0
    for role, procs in stack.processes().items():
        rss[role], fds[role], redis_by_role[role] = 0.0, 0, 0
        for p in procs:
            try:
                rss[role] += p.memory_info().rss / 2**20
                fds[role] += p.num_fds()
                redis_by_role[role] += len(
                    [
                        c
                        for c in p.net_connections(kind="tcp")
                        if c.status == psutil.CONN_ESTABLISHED
                        and getattr(c.raddr, "port", None) == stack.redis.port
                    ]
                )
            except psutil.Error:
                continue
        count += len(procs) - (1 if role == "api" and procs else 0)  # not the supervisor
    async with engine.connect() as conn:
        pg = await conn.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )
        )
    redis_clients = await asyncio.to_thread(stack.redis.clients) - 1
    api_tcp = await asyncio.to_thread(stack.open_api_connections)
    return Snapshot(rss, fds, count, int(pg or 0), redis_clients, redis_by_role, api_tcp)


def back_to_baseline(before: Snapshot, after: Snapshot) -> Check:
    """RSS and fds of each role within their margins, PostgreSQL connections within the
    pools (idle connections a pool keeps are no leak), Redis clients within 1.5x + 5,
    no API connection left open once the clients closed."""
    over: list[str] = []
    for role, mb in after.rss_mb.items():
        limit = before.rss_mb.get(role, 0.0) * RSS_FACTOR + RSS_PLUS_MB
        if mb > limit:
            over.append(f"{role} RSS {mb:.0f} MB > {limit:.0f} MB")
    for role, n in after.fds.items():
        fd_limit = int(before.fds.get(role, 0) * FD_FACTOR) + FD_PLUS
        if n > fd_limit:
            over.append(f"{role} fds {n} > {fd_limit}")
    pg_limit = max(int(before.pg_connections * 1.5) + 2, after.processes * POOL_SIZE)
    if after.pg_connections > pg_limit:
        over.append(f"PostgreSQL connections {after.pg_connections} > {pg_limit}")
    redis_limit = int(before.redis_clients * 1.5) + 5
    if after.redis_clients > redis_limit:
        over.append(f"Redis clients {after.redis_clients} > {redis_limit}")
    if after.api_tcp > 2:
        over.append(f"{after.api_tcp} API connections still open")
    detail = "\n".join(
        [f"    before the faults: {before.line()}", f"    after the soak:    {after.line()}"]
        + [f"    over: {o}" for o in over]
    )
    return Check(
        "RSS and connections back to baseline",
        not over,
        "margins: RSS 1.5x+40 MB,"
        " fds 1.5x+20, PostgreSQL within the pools, Redis 1.5x+5\n" + detail,
    )
