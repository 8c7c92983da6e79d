"""PostGraphile 4 beside Roost, for ``bench.feed_vs_postgraphile``: its install (npm, in
a scratch folder outside the repository), the SQL API it serves (a schema of the
bench's own over Roost's tables, created in the throwaway database, never in
migrations) and its server (``--cluster-workers 2``: a supervisor and two node
workers).

The API is what a PostGraphile user would write for this feed:

- ``pgbench.users`` and ``pgbench.posts``: views over Roost's ``users`` and ``posts``
  (only the columns the API shows), with smart comments for the primary keys and the
  ``posts.author_id`` relation, exposed as ``author``;
- ``pgbench.users_follower_count(users)``: a computed column, the sum of the user's
  ``followers`` counter shards (Roost's own counter rows);
- ``pgbench.home_feed(first, after_created_at, after_id)``: the pull feed, one SQL
  statement: the viewer (the ``sub`` claim of the JWT, which PostGraphile verifies and
  exposes as ``jwt.claims.sub``) and everyone they follow (live follows), each
  author's newest ``first + 1`` live posts through ``posts_author_live_idx``, merged
  newest first by ``(created_at, id)``, authors active, then cut to ``first + 1`` rows
  (one more than the page, so PostGraphile's ``hasNextPage`` is right); an author the
  viewer muted is left out, as Roost's visibility rule does. It pages by
  keyset: ``afterCreatedAt``/``afterId`` are the last node's ``createdAt``/``id``
  (PostGraphile's own cursors of a function are row numbers, which a feed that gains
  posts cannot honour).

A ``SETOF`` function gets PostGraphile's connection argument ``first``, which clashes
with the function's own ``first``: the prepended plugin :data:`PLUGIN_JS` drops the
function's declaration of it, so there is one ``first`` and its value feeds both the
function (PostGraphile reads a function's arguments by name) and the page size.
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

from app.embedded import _free_port, spawn, stop_process
from bench._support import graphql_answers, wait_answering
from domain.visibility.predicates import is_active, is_live

#: What ``npm install`` asks for (the newest 4.x).
PACKAGE = "postgraphile@4"
#: The bench's own schema in the throwaway database.
SCHEMA = "pgbench"
#: PostGraphile's pool (its ``--max-pool-size`` default), per cluster worker.
POOL_SIZE = 10
#: Node processes serving requests (``--cluster-workers``): one per CPU of the 2-core
#: machine, as PostGraphile's docs advise for production.
CLUSTER_WORKERS = 2

PLUGIN_JS = """\
// Prepended Graphile Engine plugin (bench.feed_vs_postgraphile): a SETOF function that
// declares its own `first` argument would get a second `first` from the connection
// args plugin; drop the function's one. The connection's `first` then reaches the
// function too, because PostGraphile passes a function's arguments by name.
module.exports = function DropFunctionOwnFirstPlugin(builder) {
  builder.hook("GraphQLObjectType:fields:field:args", (args, build, context) => {
    const { pgFieldIntrospection: proc, isPgFieldConnection } = context.scope;
    if (!proc || proc.kind !== "procedure" || !isPgFieldConnection) return args;
    if (!proc.argNames.includes("first") || !("first" in args)) return args;
    const { first, ...rest } = args;
    return rest;
  });
};
"""


def feed_body(schema: str, size: str) -> str:
    """The pull feed's SQL (the body of a ``SETOF {schema}.posts`` function): the
    viewer (``jwt.claims.sub``) and the accounts they follow (live follows), less the
    ones they muted, active authors only; each author's newest ``size + 1`` live posts
    after the keyset (``after_created_at``, ``after_id``) through
    ``posts_author_live_idx``, merged newest first, ``size + 1`` rows (``size``: the
    page-size argument's name)."""
    return f"""
    WITH viewer AS (
        SELECT nullif(current_setting('jwt.claims.sub', true), '')::uuid AS id
    ), authors AS (
        SELECT f.followee_id AS id FROM public.follows f JOIN viewer v ON f.follower_id = v.id
        WHERE {is_live("f")}
          AND NOT EXISTS (SELECT 1 FROM public.mutes m
                          WHERE m.muter_id = v.id AND m.muted_id = f.followee_id)
        UNION SELECT id FROM viewer
    )
    SELECT p.id, p.author_id, p.caption, p.created_at
    FROM authors a
    JOIN public.users u ON u.id = a.id AND {is_active("u")}
    CROSS JOIN LATERAL (
        SELECT id, author_id, caption, created_at FROM public.posts
        WHERE author_id = a.id AND {is_live()}
          AND (after_created_at IS NULL OR (created_at, id) < (after_created_at, after_id))
        ORDER BY created_at DESC, id DESC
        LIMIT {size} + 1
    ) p
    ORDER BY p.created_at DESC, p.id DESC
    LIMIT {size} + 1
"""


def schema_sql(schema: str, size: str) -> str:
    """The bench's schema ``schema`` (made anew): views ``users`` and ``posts`` with
    their smart comments, the computed column ``users_follower_count(users)`` and the
    pull feed ``home_feed(<size>, after_created_at, after_id)`` (:func:`feed_body`)."""
    return f"""
CREATE SCHEMA IF NOT EXISTS {schema};
DROP FUNCTION IF EXISTS {schema}.home_feed(integer, timestamptz, uuid);
DROP FUNCTION IF EXISTS {schema}.users_follower_count({schema}.users);
DROP VIEW IF EXISTS {schema}.posts;
DROP VIEW IF EXISTS {schema}.users;

CREATE VIEW {schema}.users AS
    SELECT id, username, display_name FROM public.users;
COMMENT ON VIEW {schema}.users IS '@primaryKey id';

CREATE VIEW {schema}.posts AS
    SELECT id, author_id, caption, created_at FROM public.posts;
COMMENT ON VIEW {schema}.posts IS
    E'@primaryKey id\\n@foreignKey (author_id) references {schema}.users (id)|@fieldName author';

CREATE FUNCTION {schema}.users_follower_count(u {schema}.users) RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT coalesce(sum(value), 0)::integer FROM public.counter_shards
    WHERE entity_id = u.id AND kind = 'followers'
$$;

CREATE FUNCTION {schema}.home_feed(
    {size} integer, after_created_at timestamptz DEFAULT NULL, after_id uuid DEFAULT NULL
) RETURNS SETOF {schema}.posts
LANGUAGE sql STABLE AS $$
{feed_body(schema, size)}$$;
"""


SQL = schema_sql(SCHEMA, "first")


def feed_query(first: int, *, after: tuple[str, str] | None = None) -> str:
    """The PostGraphile twin of Roost's ``viewer { feed(first) }`` selection; ``after``
    is ``(createdAt, id)`` of the previous page's last node."""
    keyset = f', afterCreatedAt: "{after[0]}", afterId: "{after[1]}"' if after else ""
    return (
        f"{{ homeFeed(first: {first}{keyset}) {{ edges {{ cursor node {{ id caption createdAt"
        " author { username displayName followerCount } } } pageInfo { endCursor hasNextPage } } }"
    )


def install(folder: Path) -> tuple[Path, str]:
    """Install PostGraphile 4 with npm into ``folder`` unless it is there already;
    write the plugin beside it. Returns (the ``postgraphile`` CLI, its version).

    Raises RuntimeError when node/npm are missing or the install fails."""
    cli = folder / "node_modules" / ".bin" / "postgraphile"
    if not cli.exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            raise RuntimeError("PostGraphile needs node and npm on PATH")
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "package.json").exists():
            (folder / "package.json").write_text('{"name": "roost-bench-postgraphile"}\n')
        print(f"installing {PACKAGE} into {folder} (once)…", flush=True)
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", PACKAGE],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode != 0 or not cli.exists():
            raise RuntimeError(f"npm install {PACKAGE} failed: {done.stderr[-2000:]}")
    (folder / "drop-function-own-first.js").write_text(PLUGIN_JS)
    manifest = folder / "node_modules" / "postgraphile" / "package.json"
    return cli, json.loads(manifest.read_text())["version"]


@contextlib.contextmanager
def node_server(
    cmd: list[str], *, env: dict[str, str], port: int, log: Path, name: str, wait_s: float
) -> Iterator[tuple[str, psutil.Process]]:
    """Run a node GraphQL server (``cmd``, output appended to ``log``); yield (its /graphql
    URL on ``port``, the root process) once ``{ __typename }`` answers 200, raising
    RuntimeError if it exits or stays silent ``wait_s`` seconds; stop it and every
    process under it on exit."""
    with open(log, "ab") as out:
        proc = spawn(cmd, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/graphql"
    root = psutil.Process(proc.pid)
    try:
        wait_answering(proc, graphql_answers(url), name=name, timeout=wait_s, log=log)
        yield url, root
    finally:
        children = root.children(recursive=True) if proc.poll() is None else []
        stop_process(proc)
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.terminate()
        psutil.wait_procs(children, timeout=10)


@contextlib.contextmanager
def postgraphile_process(
    folder: Path, cli: Path, database_url: str, jwt_secret: str, log: Path
) -> Iterator[tuple[str, psutil.Process]]:
    """Run PostGraphile (``--cluster-workers``) over ``database_url`` with the production
    flags of its docs (no GraphiQL, no query log, no CORS, no watch; NODE_ENV
    production), verifying Roost's HS256 access tokens (issuer ``roost``, no audience).
    Yields (the /graphql URL, the supervisor process) once it answers; stops it on exit."""
    port = _free_port()
    dsn = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
    cmd = [
        str(cli),
        "--connection", dsn,
        "--schema", SCHEMA,
        "--host", "127.0.0.1",
        "--port", str(port),
        "--disable-graphiql",
        "--disable-query-log",
        "--disable-default-mutations",
        "--no-setof-functions-contain-nulls",
        "--prepend-plugins", str(folder / "drop-function-own-first.js"),
        "--jwt-secret", jwt_secret,
        "--jwt-verify-algorithms", "HS256",
        "--jwt-verify-issuer", "roost",
        "--jwt-verify-audience", "",
        "--cluster-workers", str(CLUSTER_WORKERS),
    ]  # fmt: skip
    env = dict(os.environ, NODE_ENV="production")
    # The npm bin is a node script: the supervisor is this process, its workers its
    # children.
    with node_server(cmd, env=env, port=port, log=log, name="PostGraphile", wait_s=60) as up:
        yield up
