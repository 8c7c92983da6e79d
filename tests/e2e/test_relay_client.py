"""Relay against a running Roost: relay-compiler compiles a small project on the
committed SDL (a @refetchable fragment with a bidirectional @connection over the keyset
followers list, a mutation with a typed error read through the Error interface) with no
error, and relay-runtime in node executes it: the first page and loadNext pages merged by
its ConnectionHandler, the last page and loadPrevious pages (``last`` with the default
``first`` that Relay sends for a null one), the mutation's payload updating the store,
the typed error's fields read back from the store.

The npm packages are installed once into a cache folder (tests/support/npm.py); the
project is tests/support/js/relay/. Skips where node and npm are missing."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from app.print_schema import SCHEMA_FILE
from tests.support.actions import follow_all
from tests.support.npm import JS_DIR, npm_folder, require_node, run_node
from tests.support.ws import start_client_api

#: relay-compiler ships its native binary in the npm package.
PACKAGES = ["relay-compiler@21.0.1", "relay-runtime@21.0.1"]
PROJECT = JS_DIR / "relay"

FOLLOWERS = """query($u: String!) { user(username: $u) { followers(first: 100) {
  edges { node { username } } } } }"""


@pytest.fixture(scope="module")
def packages() -> Path:
    require_node()
    return npm_folder("relay", PACKAGES)


def compiled(packages: Path, at: Path) -> Path:
    """The Relay project at ``at`` (the committed SDL, the operations of
    tests/support/js/relay, the packages linked in) with its artifacts compiled; the
    path of its script. Fails with the compiler's output on any error."""
    (at / "src").mkdir(parents=True)
    shutil.copy(PROJECT / "relay.config.json", at)
    shutil.copy(PROJECT / "RoostRelay.js", at / "src")
    shutil.copy(SCHEMA_FILE, at / "schema.graphql")
    (at / "package.json").write_text('{"private": true}\n')  # CommonJS, as the artifacts
    (at / "node_modules").symlink_to(packages / "node_modules")
    run = subprocess.run(
        [str(at / "node_modules" / ".bin" / "relay-compiler")],
        cwd=at,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 0 and "ERROR" not in said and "WARN" not in said, said
    artifacts = {p.name for p in (at / "src" / "__generated__").iterdir()}
    assert artifacts == {
        f"{name}.graphql.js"
        for name in (
            "RoostRelayFollowersQuery",
            "RoostRelay_followers",
            "RoostRelayFollowersPaginationQuery",
            "RoostRelayTargetQuery",
            "RoostRelayFollowMutation",
        )
    }, artifacts
    return at / "src" / "RoostRelay.js"


async def test_relay_compiles_and_runs_against_roost(packages, settings, gql, make_users, tmp_path):
    script = await asyncio.to_thread(compiled, packages, tmp_path / "project")
    viewer, star, target, *fans = await make_users(11, prefix="rl")
    await follow_all(gql, fans, star)
    listed = (await gql(FOLLOWERS, {"u": star.username}, token=viewer.token))["data"]
    expected = [e["node"]["username"] for e in listed["user"]["followers"]["edges"]]
    assert sorted(expected) == sorted(f.username for f in fans)

    api = await asyncio.to_thread(start_client_api, settings)
    try:
        out = await run_node(
            script.parent.parent,
            script,
            {
                "url": api.http,
                "viewer": {"token": viewer.token, "id": viewer.gid},
                "star": star.username,
                "target": {"id": target.gid, "username": target.username},
            },
            tmp_path,
        )
    finally:
        api.stop()
    print(json.dumps(out, indent=1)[:3000])

    # 1. The first page of 3 (the fragment's default), then loadNext pages merged in.
    forward = out["forward"]
    assert forward["sizes"] == [3, 6, 8] and not forward["missing"]
    assert forward["usernames"] == expected
    assert forward["pageInfo"]["hasNextPage"] is False and forward["totalCount"] == len(fans)
    assert forward["requests"] == ["RoostRelayFollowersQuery"] + 2 * [
        "RoostRelayFollowersPaginationQuery"
    ]

    # 2. The last 3, then loadPrevious pages prepended: the same list. Relay sends the
    # fragment's default for the null ``first`` along with ``last``: Roost ignores it.
    backward = out["backward"]
    assert backward["lastPage"] == expected[-3:]
    assert backward["sizes"] == [3, 6, 8] and not backward["missing"]
    assert backward["usernames"] == expected
    assert backward["pageInfo"]["hasPreviousPage"] is False
    assert all(v["first"] == v["last"] == 3 for v in backward["variables"]), backward

    # 3. The follow's payload updated the stored user: count and flag, no refetch.
    payload = out["payload"]
    assert payload["before"]["followerCount"] == 0 and not payload["before"]["followedByViewer"]
    assert payload["response"]["__typename"] == "FollowSuccess"
    assert payload["after"] == payload["response"]["user"] and not payload["afterMissing"]
    assert payload["after"]["followerCount"] == 1 and payload["after"]["followedByViewer"]
    assert payload["requests"] == [
        "RoostRelayTargetQuery",
        "RoostRelayFollowMutation",
        "RoostRelayFollowMutation",
    ]

    # 4. A typed error through the Error interface, read back from the store with its
    # fields, and the discriminator relay-compiler asked for to know it is an Error.
    refused = payload["refused"]
    assert refused["__typename"] == "CannotFollowSelfError", refused
    assert refused["code"] == "CANNOT_FOLLOW_SELF" and refused["message"]
    assert payload["isError"] == {"CannotFollowSelfError": True, "FollowSuccess": False}
    record = payload["errorRecord"]
    assert (record["code"], record["message"]) == (refused["code"], refused["message"])
