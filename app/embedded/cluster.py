"""A throw-away Redis Cluster of real ``redis-server`` masters on loopback ports, for
tests and benchmarks (``cluster-require-full-coverage no``: the others serve on when one
dies)."""

from __future__ import annotations

import contextlib
import random
import socket
import subprocess
import time
from pathlib import Path

from app.embedded.processes import (
    START_TIMEOUT,
    EmbeddedError,
    _log_tail,
    spawn,
    stop_process,
)
from app.embedded.redis import redis_server_binary

SLOTS = 16_384


class EmbeddedRedisCluster:
    """``masters`` cluster-enabled ``redis-server`` processes under ``directory``;
    :meth:`restart` brings a killed one back empty with the same id and slots."""

    def __init__(
        self,
        directory: Path,
        *,
        masters: int = 3,
        binary: str | None = None,
        node_timeout_ms: int = 2_000,
    ) -> None:
        if masters < 1:
            raise ValueError("a cluster needs at least one master")
        self.directory = directory.expanduser().resolve()
        self.masters = masters
        self.binary = binary or str(redis_server_binary())
        self.node_timeout_ms = node_timeout_ms
        self.ports: list[int] = []
        self._procs: list[subprocess.Popen[bytes] | None] = []

    @property
    def nodes(self) -> list[str]:
        """``127.0.0.1:<port>`` of every master, in slot order."""
        return [f"127.0.0.1:{p}" for p in self.ports]

    @property
    def url(self) -> str:
        """A ``redis://`` URL of the first master (a cluster client discovers the rest)."""
        return f"redis://{self.nodes[0]}/0"

    def start(self) -> list[str]:
        """Start and join the masters; :attr:`nodes` once ok (EmbeddedError past START_TIMEOUT)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            for i in range(self.masters):
                self.ports.append(0)
                self._procs.append(None)
                self._launch(i)
            self._form()
        except BaseException:
            self.stop()
            raise
        return self.nodes

    def _launch(self, i: int) -> None:
        """Start master ``i`` (a new free port unless it has one), wait for PING."""
        for _attempt in range(3):
            port = self.ports[i] or _free_cluster_port()
            folder = self.directory / f"node{i}"
            folder.mkdir(exist_ok=True)
            cmd = [
                self.binary,
                "--bind", "127.0.0.1",
                "--port", str(port),
                "--dir", str(folder),
                "--logfile", str(folder / "redis.log"),
                "--daemonize", "no",
                "--save", "",
                "--appendonly", "no",
                "--cluster-enabled", "yes",
                "--cluster-config-file", str(folder / "nodes.conf"),
                "--cluster-node-timeout", str(self.node_timeout_ms),
                "--cluster-require-full-coverage", "no",
            ]  # fmt: skip
            proc = spawn(cmd, own_session=True, stdout=subprocess.DEVNULL)
            deadline = time.monotonic() + START_TIMEOUT
            while time.monotonic() < deadline and proc.poll() is None:
                if _command(port, "PING"):
                    self.ports[i], self._procs[i] = port, proc
                    return
                time.sleep(0.05)
            stop_process(proc)
            if self.ports[i]:  # a restart on its own port: do not move it
                break
        raise EmbeddedError(
            f"cluster node {i} did not start:\n" + _log_tail(self.directory / f"node{i}/redis.log")
        )

    def _form(self) -> None:
        per = SLOTS // self.masters
        for i, port in enumerate(self.ports):
            first, last = i * per, (SLOTS - 1 if i == self.masters - 1 else (i + 1) * per - 1)
            _command(port, "CLUSTER", "ADDSLOTS", *range(first, last + 1), check=True)
        for port in self.ports[1:]:
            _command(port, "CLUSTER", "MEET", "127.0.0.1", self.ports[0], check=True)
        self.wait_ok()

    def wait_ok(self, nodes: list[int] | None = None) -> None:
        """Wait until the given masters (default all) report ``cluster_state:ok``, know
        every master, and agree on who serves each slot range."""
        ports = [self.ports[i] for i in (nodes if nodes is not None else range(self.masters))]
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if all(self._healthy(p) for p in ports):
                return
            time.sleep(0.05)
        raise EmbeddedError(f"the Redis Cluster on {self.nodes} did not form")

    def _healthy(self, port: int) -> bool:
        info = _command(port, "CLUSTER", "INFO") or b""
        fields = dict(line.split(":", 1) for line in info.decode().splitlines() if ":" in line)
        if fields.get("cluster_state") != "ok":
            return False
        if int(fields.get("cluster_known_nodes", 0)) != self.masters:
            return False
        slots = _command(port, "CLUSTER", "SLOTS") or []
        owners = {(int(r[0]), int(r[2][1])) for r in slots}
        return len(owners) == self.masters and all(p in self.ports for _, p in owners)

    def kill(self, i: int) -> None:
        """SIGKILL master ``i`` (no shutdown, no save): its slots stop answering."""
        proc = self._procs[i]
        if proc is not None:
            proc.kill()
            proc.wait()
            self._procs[i] = None

    def restart(self, i: int) -> None:
        """Start master ``i`` again, empty, with its port, id and slots; wait until ok."""
        if self._procs[i] is not None:
            return
        self._launch(i)
        self.wait_ok()

    def stop(self) -> None:
        """Stop every master (SIGTERM, then SIGKILL after STOP_TIMEOUT)."""
        for i, proc in enumerate(self._procs):
            if proc is not None:
                stop_process(proc)
                self._procs[i] = None


def _free_cluster_port() -> int:
    """A port P of 127.0.0.1 with P and P + 10000 (its cluster bus) both free: Redis
    refuses ports above 55535 in cluster mode."""
    rng = random.SystemRandom()
    for _attempt in range(200):
        port = rng.randrange(20_000, 55_535)
        if _bindable(port) and _bindable(port + 10_000):
            return port
    raise EmbeddedError("no free port pair for a cluster node")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _command(port: int, *args: object, check: bool = False):
    """One command's reply from ``127.0.0.1:port``, or None if the node does not answer
    (EmbeddedError with ``check``)."""
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, socket_connect_timeout=1)
    try:
        return client.execute_command(*args)
    except (redis.RedisError, OSError) as exc:
        if check:
            raise EmbeddedError(f"{args[:2]} on port {port} failed: {exc}") from exc
        return None
    finally:
        with contextlib.suppress(Exception):
            client.close()
