"""Caching semantics of GraphQL reads over GET (app/cache_policy.py): private when signed
in, public with the smallest per-field hint for anonymous reads of public data, no-store
for a field that depends on the viewer or an answer with errors; a weak ETag and 304 on
If-None-Match; HEAD like GET without the body; the same for a persisted query by hash."""

from __future__ import annotations

import hashlib
import json
import uuid

import pytest

from schema.cache_hints import FIELD_HINTS, TYPE_HINTS, VIEWER

PROFILE = "query P($u: String!) { user(username: $u) { id username displayName } }"
COUNTS = "query C($u: String!) { user(username: $u) { username followerCount } }"
WITH_VIEWER_FIELD = "query V($u: String!) { user(username: $u) { username followedByViewer } }"
FRAGMENT = """query F($u: String!) { user(username: $u) { ...Who } }
fragment Who on User { username posts(first: 2) { edges { node { caption likeCount } } } }"""


@pytest.fixture
async def someone(make_users):
    (user,) = await make_users(1, prefix="cache")
    return user


async def _get(client, query, variables, **headers):
    return await client.get(
        "/graphql", params={"query": query, "variables": json.dumps(variables)}, headers=headers
    )


@pytest.mark.parametrize(
    ("query", "control"),
    [
        (PROFILE, "public, max-age=60"),
        (COUNTS, "public, max-age=15"),  # the smallest hint wins
        (FRAGMENT, "public, max-age=15"),  # through fragments and connections
        (WITH_VIEWER_FIELD, "no-store"),  # depends on who asks
        ("{ viewer { id } }", "no-store"),
        ("{ __typename }", "no-store"),  # a root field with no hint: no caching
    ],
)
async def test_anonymous_reads_are_public_with_the_smallest_hint(client, someone, query, control):
    resp = await _get(client, query, {"u": someone.username})
    assert resp.status_code == 200 and "errors" not in resp.json(), resp.text
    assert resp.headers["cache-control"] == control
    assert resp.headers["vary"] == "Accept, Authorization"
    assert resp.headers["etag"].startswith('W/"')


async def test_signed_in_reads_are_private(client, someone):
    resp = await _get(
        client, PROFILE, {"u": someone.username}, Authorization=f"Bearer {someone.token}"
    )
    assert resp.status_code == 200, resp.text
    assert resp.headers["cache-control"] == "private, no-store"
    assert "Authorization" in resp.headers["vary"]


async def test_an_answer_with_errors_is_not_stored(client):
    resp = await _get(client, '{ user(username: "x") { feed(first: 1) { edges { cursor } } } }', {})
    assert resp.headers["cache-control"] == "no-store"


async def test_if_none_match_answers_304_without_a_body(client, someone):
    first = await _get(client, PROFILE, {"u": someone.username})
    tag = first.headers["etag"]
    again = await _get(client, PROFILE, {"u": someone.username}, **{"If-None-Match": tag})
    assert again.status_code == 304 and again.content == b""
    assert again.headers["etag"] == tag
    assert again.headers["cache-control"] == "public, max-age=60"
    listed = await _get(
        client, PROFILE, {"u": someone.username}, **{"If-None-Match": f'"other", {tag}'}
    )
    assert listed.status_code == 304
    stale = await _get(client, PROFILE, {"u": someone.username}, **{"If-None-Match": '"old"'})
    assert stale.status_code == 200 and stale.json()["data"]["user"]["username"]


async def test_head_is_get_without_the_body(client, someone):
    params = {"query": PROFILE, "variables": json.dumps({"u": someone.username})}
    got = await client.get("/graphql", params=params)
    head = await client.head("/graphql", params=params)
    assert head.status_code == 200 and head.content == b""
    for name in ("etag", "cache-control", "vary", "content-type", "content-length"):
        assert head.headers[name] == got.headers[name], name


async def test_a_persisted_query_by_hash_over_get_is_cached_the_same(client, someone):
    # A text of this run alone: the persisted queries outlive a run on a shared Redis.
    profile = f"{PROFILE} # {uuid.uuid4()}"
    sha = hashlib.sha256(profile.encode()).hexdigest()
    ext = json.dumps({"persistedQuery": {"version": 1, "sha256Hash": sha}})
    variables = json.dumps({"u": someone.username})
    miss = await client.get("/graphql", params={"extensions": ext, "variables": variables})
    assert miss.json()["errors"][0]["extensions"]["code"] == "PERSISTED_QUERY_NOT_FOUND"
    stored = await client.post(
        "/graphql",
        json={
            "query": profile,
            "variables": {"u": someone.username},
            "extensions": json.loads(ext),
        },
    )
    assert stored.status_code == 200, stored.text
    hit = await client.get("/graphql", params={"extensions": ext, "variables": variables})
    assert hit.status_code == 200 and hit.json()["data"]["user"]["username"] == someone.username
    assert hit.headers["cache-control"] == "public, max-age=60"
    again = await client.get(
        "/graphql",
        params={"extensions": ext, "variables": variables},
        headers={"If-None-Match": hit.headers["etag"]},
    )
    assert again.status_code == 304


def test_every_hint_names_a_field_or_type_of_the_schema():
    from app.print_schema import INTROSPECTION_FILE

    types = {
        t["name"]: {f["name"] for f in t.get("fields") or ()}
        for t in json.loads(INTROSPECTION_FILE.read_text())["__schema"]["types"]
    }
    assert set(TYPE_HINTS) <= set(types), set(TYPE_HINTS) - set(types)
    missing = [(t, f) for t, f in FIELD_HINTS if f not in types.get(t, ())]
    assert not missing
    assert FIELD_HINTS["Query", "viewer"] == VIEWER
