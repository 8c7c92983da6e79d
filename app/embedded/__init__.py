"""Embedded PostgreSQL and Redis for ``make run`` and ``make test``: :func:`services`
starts what ``DATABASE_URL`` / ``REDIS_URL`` leave unset; processes on the same data
folder share the servers, and the last one to let go stops them."""

from app.embedded.admin import MAINTENANCE_DATABASE, drop_database, ensure_database
from app.embedded.lifecycle import DEFAULT_DATABASE, ServiceURLs, services
from app.embedded.postgres import EmbeddedPostgres
from app.embedded.processes import START_TIMEOUT, STOP_TIMEOUT, EmbeddedError, spawn, stop_process
from app.embedded.processes import _free_port as _free_port  # private, but bench/ imports it
from app.embedded.redis import EmbeddedRedis, redis_server_binary
from app.embedded.redis import _ping as _ping  # private, but bench/ imports it

__all__ = [
    "DEFAULT_DATABASE",
    "MAINTENANCE_DATABASE",
    "START_TIMEOUT",
    "STOP_TIMEOUT",
    "EmbeddedError",
    "EmbeddedPostgres",
    "EmbeddedRedis",
    "ServiceURLs",
    "drop_database",
    "ensure_database",
    "redis_server_binary",
    "services",
    "spawn",
    "stop_process",
]
