"""Real GraphQL clients against a running Roost: urql's graphcache on the committed
introspection (typed errors, relay pages); Apollo Client in node (typed errors read
back through the normalised cache with the shipped type map, relay-style paging merged by
``relayStylePagination``, the cache updated by a mutation's payload, a subscription over
graphql-ws, @defer and @stream over HTTP multipart, @defer over graphql-ws), and Apollo
Client in headless Chromium on a page of another origin (CORS: query, mutation,
subscription and an APQ GET). Relay: tests/e2e/test_relay_client.py.

The npm packages are installed once into a cache folder (tests/support/npm.py); the
scripts are tests/support/js/. Skips where node and npm, or Chromium (Debian:
``apt-get install chromium``), are missing."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles

from app.print_schema import INTROSPECTION_FILE, POSSIBLE_TYPES_FILE
from tests.support.actions import follow_all
from tests.support.browser import chromium, chromium_path
from tests.support.npm import npm_folder, require_node, run_node, with_script
from tests.support.polling import PATIENCE_S
from tests.support.servers import free_port
from tests.support.ws import start_client_api

#: Apollo Client 4 and its peers; esbuild bundles the browser page.
PACKAGES = [
    "@apollo/client@4.3.8",
    "graphql@16.11.0",
    "graphql-ws@6.0.6",
    "rxjs@7.8.2",
    "ws@8.18.3",
    "esbuild@0.25.10",
]

FOLLOWERS = """query($u: String!) { user(username: $u) { followers(first: 100) {
  edges { node { username } } } } }"""


@pytest.fixture(scope="module")
def packages() -> Path:
    require_node()
    return npm_folder("apollo-client", PACKAGES)


async def test_apollo_client_in_node(packages, settings, gql, make_users, worker, tmp_path):
    viewer, author, star, target, *fans = await make_users(11, prefix="ap")
    await follow_all(gql, [viewer], author)
    await follow_all(gql, fans, star)
    listed = (await gql(FOLLOWERS, {"u": star.username}, token=viewer.token))["data"]
    expected = [e["node"]["username"] for e in listed["user"]["followers"]["edges"]]
    assert sorted(expected) == sorted(f.username for f in fans)

    api = await asyncio.to_thread(start_client_api, settings)
    try:
        out = await run_node(
            packages,
            with_script(packages, "apollo_node.mjs"),
            {
                "url": api.http,
                "ws": api.ws,
                "possibleTypes": json.loads(POSSIBLE_TYPES_FILE.read_text()),
                "viewer": {"token": viewer.token},
                "author": {"token": author.token},
                "star": star.username,
                "target": {"id": target.gid, "username": target.username},
            },
            tmp_path,
        )
    finally:
        api.stop()
    print(json.dumps(out, indent=1)[:3000])

    # 1. The type map keeps a typed error's fields in the cache (without it they are lost).
    with_map = out["typedErrors"]["withMap"]
    assert with_map["result"]["__typename"] == "ForbiddenError"
    assert with_map["cached"] == with_map["result"]
    assert with_map["cached"]["code"] == "FORBIDDEN" and with_map["cached"]["message"]
    assert "code" not in out["typedErrors"]["withoutMap"]["cached"]  # what the map is for

    # 2. Pages of 3 merged into one list: every follower once, in the server's order.
    paging = out["paging"]
    assert paging["pages"] == 3
    assert paging["usernames"] == expected
    assert paging["hasNextPage"] is False

    # 3. The follow's payload updated the cached user: count and flag, no refetch.
    payload = out["payload"]
    assert payload["before"]["followerCount"] == 0 and not payload["before"]["followedByViewer"]
    assert payload["payload"]["__typename"] == "FollowSuccess"
    assert payload["after"] == payload["again"] == payload["payload"]["user"]
    assert payload["after"]["followerCount"] == 1 and payload["after"]["followedByViewer"]

    # 4. A post of the followed author arrived over graphql-ws, normalised into the cache.
    sub = out["subscription"]
    assert sub["event"]["id"] in sub["posted"], sub
    assert sub["event"]["author"]["username"] == author.username
    assert sub["cachedPost"] and sub["cachedPost"]["caption"] == sub["event"]["caption"]

    # 5. @defer: the user first, its counts in a later part; @stream: the edges one by one.
    deferred = out["defer"]
    assert deferred[-1]["dataState"] == "complete" and not deferred[-1].get("error"), deferred
    assert deferred[-1]["data"]["user"]["followerCount"] == len(fans)
    streaming = [e for e in deferred if e["dataState"] == "streaming"]
    assert streaming and "followerCount" not in streaming[0]["data"]["user"], deferred
    streamed = out["stream"]
    assert streamed[-1]["dataState"] == "complete" and not streamed[-1].get("error"), streamed
    final = [e["node"]["username"] for e in streamed[-1]["data"]["user"]["followers"]["edges"]]
    assert final == expected[:5]  # the parts merged (tests/e2e/test_incremental.py: the parts)

    # 6. The same @defer over graphql-ws: the parts as messages, merged alike.
    over_ws = out["deferOverWs"]
    assert over_ws[-1]["dataState"] == "complete" and not over_ws[-1].get("error"), over_ws
    assert over_ws[-1]["data"] == deferred[-1]["data"]
    streaming = [e for e in over_ws if e["dataState"] == "streaming"]
    assert streaming and "followerCount" not in streaming[0]["data"]["user"], over_ws


URQL = ["@urql/core@6.0.3", "@urql/exchange-graphcache@9.0.2", "graphql@16.11.0"]


async def test_urql_graphcache_with_the_committed_introspection(
    settings, gql, make_users, tmp_path
):
    """urql's normalised cache keeps a typed error's fields and merges relay pages with
    the shipped introspection, without "heuristic fragment matching" warnings."""
    require_node()
    folder = await asyncio.to_thread(npm_folder, "urql", URQL)
    viewer, star, *fans = await make_users(9, prefix="uq")
    await follow_all(gql, fans, star)
    listed = (await gql(FOLLOWERS, {"u": star.username}, token=viewer.token))["data"]
    expected = [e["node"]["username"] for e in listed["user"]["followers"]["edges"]]
    api = await asyncio.to_thread(start_client_api, settings)
    try:
        out = await run_node(
            folder,
            with_script(folder, "urql_node.mjs"),
            {
                "url": api.http,
                "introspection": json.loads(INTROSPECTION_FILE.read_text()),
                "viewer": {"token": viewer.token},
                "star": star.username,
            },
            tmp_path,
        )
    finally:
        api.stop()
    assert out["network"]["__typename"] == "ForbiddenError"
    assert out["cached"] == out["network"] and out["cached"]["code"] == "FORBIDDEN"
    assert out["usernames"] == expected
    assert not [w for w in out["warnings"] if "Heuristic" in w], out["warnings"]


# --- Chromium: a page of another origin -------------------------------------------------


async def _static_site(folder: Path, port: int):
    """Serve ``folder`` on 127.0.0.1:``port`` (uvicorn in this loop); returns a stopper."""
    app = Starlette(routes=[Mount("/", StaticFiles(directory=folder, html=True))])
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, lifespan="off", log_level="warning")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.02)

    async def stop() -> None:
        server.should_exit = True
        await task

    return stop


def _bundle(folder: Path, out_dir: Path) -> None:
    """Bundle the page's script (Apollo Client and graphql-ws) with esbuild."""
    entry = with_script(folder, "apollo_page.mjs")
    subprocess.run(
        [
            str(folder / "node_modules" / ".bin" / "esbuild"),
            str(entry),
            "--bundle",
            "--format=esm",
            "--platform=browser",
            "--log-level=warning",
            f"--outfile={out_dir / 'page.js'}",
        ],
        cwd=folder,
        check=True,
        timeout=120,
    )


@pytest.mark.skipif(
    chromium_path() is None,
    reason="Chromium is not installed (Debian: apt-get install chromium): the CORS test "
    "needs a real browser",
)
async def test_apollo_client_in_a_browser_from_another_origin(
    packages, settings, make_users, tmp_path
):
    (viewer,) = await make_users(1, prefix="br")
    site = tmp_path / "site"
    site.mkdir()
    await asyncio.to_thread(_bundle, packages, site)
    allowed_port, other_port = free_port(), free_port()
    api = await asyncio.to_thread(
        start_client_api, settings, CORS_ALLOW_ORIGINS=f"http://127.0.0.1:{allowed_port}"
    )
    config = {"url": api.http, "token": viewer.token}
    (site / "index.html").write_text(
        "<!doctype html><meta charset=utf-8><title>Roost from another origin</title>"
        f"<script>window.ROOST = {json.dumps(config)};</script>"
        '<script type="module" src="page.js"></script><pre id="out"></pre>'
    )
    stops = [await _static_site(site, allowed_port), await _static_site(site, other_port)]
    try:
        async with chromium(f"http://127.0.0.1:{allowed_port}/", offline=True) as page:
            raw = await page.wait_for(
                "window.__roost && window.__roost.done && JSON.stringify(window.__roost)",
                within=4 * PATIENCE_S,
            )
            out = json.loads(raw)
            await page.screenshot(tmp_path / "page.png")
        async with chromium(f"http://127.0.0.1:{other_port}/", offline=True) as page:
            refused = json.loads(
                await page.wait_for(
                    "window.__roost && window.__roost.done && JSON.stringify(window.__roost)",
                    within=4 * PATIENCE_S,
                )
            )
    finally:
        for stop in stops:
            await stop()
        api.stop()
    print(json.dumps(out, indent=1)[:3000])
    assert out.get("error") is None, json.dumps(out)
    assert out["query"]["viewer"]["username"] == viewer.username
    assert out["mutation"]["__typename"] == "CreatePostSuccess"
    assert out["subscription"]["likeCount"] in (0, 1)
    assert out["subscription"]["post"]["id"] == out["mutation"]["post"]["id"]
    # The APQ GETs: a hash alone, first unknown (then registered), then served by hash.
    gets = [r for r in out["requests"] if r["method"] == "GET"]
    assert gets and all("sha256Hash" in r["url"] and "query=" not in r["url"] for r in gets[-1:])
    assert out["apq"]["user"]["username"] == viewer.username
    assert gets[-1]["status"] == 200
    # The same page from an origin not on CORS_ALLOW_ORIGINS: the browser refuses.
    assert refused["error"] and "fetch" in refused["error"].lower(), refused
