"""HTTP guards of /graphql (app/http_view.py, app/http_guards.py), through the HTTP app
on real Redis and PostgreSQL: automatic persisted queries, Idempotency-Key, rate limits,
JSON errors for requests refused as a whole, and all of it with Redis down.

Every test makes its own keys: persisted queries carry a unique operation name, users
and idempotency keys are fresh, anonymous clients get a random address; so runs sharing
one Redis never meet. Apps with other settings than the suite's (rate limits on, tiny
budgets) are built here with ``create_app(settings.model_copy(update=...))``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import random
import uuid
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

import resolvers.posts
from app.asgi import create_app
from app.guard_rules import operation_info
from app.settings import Settings
from tests.support.redis_trips import RoundTrips
from tests.support.users import TEST_PASSWORD

CREATE_POST = """mutation($c: String!) { createPost(input: { caption: $c }) {
  __typename ... on CreatePostSuccess { post { id caption } } ... on Error { code message } } }"""
UPDATE_BIO = """mutation($b: String!) { updateProfile(input: { bio: $b }) {
  __typename ... on UpdateProfileSuccess { user { bio } } } }"""
LOG_IN = """mutation($u: String!, $p: String!) { logIn(input: { username: $u, password: $p }) {
  __typename ... on Error { code } } }"""
SIGN_UP = """mutation($i: SignUpInput!) { signUp(input: $i) {
  __typename ... on SignUpSuccess { user { username } } ... on Error { code } } }"""


def sha(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def apq(digest: str) -> dict:
    return {"persistedQuery": {"version": 1, "sha256Hash": digest}}


def unique_query() -> str:
    """A query no other test (or run) persisted: its operation name is new."""
    return f"query Q{uuid.uuid4().hex} {{ __typename viewer {{ username }} }}"


def random_ip() -> str:
    return "10." + ".".join(str(random.randint(1, 254)) for _ in range(3))


def request_error(resp: httpx.Response) -> tuple[str, str]:
    """(code, message) of a request refused as a whole: JSON, one error, no data."""
    assert resp.headers["content-type"].startswith("application/json"), resp.text
    body = resp.json()
    assert "data" not in body, body
    (err,) = body["errors"]
    return err["extensions"]["code"], err["message"]


async def post_count(engine: AsyncEngine, author: uuid.UUID) -> int:
    async with engine.connect() as conn:
        return await conn.scalar(
            text("SELECT count(*) FROM posts WHERE author_id = :a"), {"a": author}
        )


@pytest.fixture
async def make_client(
    settings: Settings, engine: AsyncEngine
) -> AsyncIterator[Callable[..., httpx.AsyncClient]]:
    """``make_client(ip=..., **settings)``: a client of a fresh app with those settings
    (field names: ``rate_limit_requests=3``), from ``ip`` (default: a random address)."""
    clients: list[httpx.AsyncClient] = []

    def _make(ip: str | None = None, **overrides) -> httpx.AsyncClient:
        app = create_app(settings.model_copy(update=overrides), engine=engine)
        transport = httpx.ASGITransport(app=app, client=(ip or random_ip(), 40_000))
        client = httpx.AsyncClient(transport=transport, base_url="http://roost.test")
        clients.append(client)
        return client

    yield _make
    for client in clients:
        await client.aclose()


@pytest.fixture
async def redis(settings: Settings) -> AsyncIterator[Redis]:
    client = Redis.from_url(settings.redis_url)
    yield client
    await client.aclose()


def gql_post(
    client: httpx.AsyncClient,
    query: str | None,
    variables: dict | None = None,
    *,
    token: str | None = None,
    key: str | None = None,
    extensions: dict | None = None,
):
    headers = {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    if key:
        headers["Idempotency-Key"] = key
    body: dict = {"variables": variables or {}}
    if query is not None:
        body["query"] = query
    if extensions is not None:
        body["extensions"] = extensions
    return client.post("/graphql", json=body, headers=headers)


# --- automatic persisted queries --------------------------------------------------------


async def test_apq_round_trip_over_post(client, make_users, redis, settings):
    (a,) = await make_users(1)
    query = unique_query()
    digest = sha(query)

    miss = await gql_post(client, None, token=a.token, extensions=apq(digest))
    assert miss.status_code == 200  # Apollo's status: clients then re-send with the query
    assert request_error(miss) == ("PERSISTED_QUERY_NOT_FOUND", "PersistedQueryNotFound")
    assert "no-cache" in miss.headers["cache-control"]

    registered = await gql_post(client, query, token=a.token, extensions=apq(digest))
    assert registered.status_code == 200
    assert registered.json() == {
        "data": {"__typename": "Query", "viewer": {"username": a.username}}
    }
    ttl = await redis.ttl(f"roost:apq:{digest}")
    assert 0 < ttl <= settings.apq_ttl_days * 86_400

    hit = await gql_post(client, None, token=a.token, extensions=apq(digest))
    assert hit.status_code == 200 and hit.json() == registered.json()
    # Upper-case hex names the same query.
    hit2 = await gql_post(client, None, token=a.token, extensions=apq(digest.upper()))
    assert hit2.json() == registered.json()


async def test_apq_over_get(client, make_users):
    (a,) = await make_users(1)
    name = f"Q{uuid.uuid4().hex}"
    query = f"query {name}($u: String!) {{ user(username: $u) {{ username }} }}"
    digest = sha(query)
    params = {"extensions": json.dumps(apq(digest)), "variables": json.dumps({"u": a.username})}

    miss = await client.get("/graphql", params=params)  # httpx sends Accept: */*
    assert miss.status_code == 200
    assert request_error(miss)[0] == "PERSISTED_QUERY_NOT_FOUND"

    # Apollo Client's retry: the same GET with the query added registers it.
    reg = await client.get("/graphql", params={**params, "query": query})
    assert reg.json() == {"data": {"user": {"username": a.username}}}

    hit = await client.get("/graphql", params=params, headers={"Accept": "application/json"})
    assert hit.status_code == 200 and hit.json() == reg.json()
    # A browser's GET without a query still gets GraphiQL.
    page = await client.get("/graphql", headers={"Accept": "text/html"})
    assert page.status_code == 200 and "text/html" in page.headers["content-type"]


async def test_apq_hash_that_does_not_match_the_query_is_refused(client):
    query = unique_query()
    wrong = sha(query + " ")
    resp = await gql_post(client, query, extensions=apq(wrong))
    assert resp.status_code == 400
    assert request_error(resp)[0] == "BAD_USER_INPUT"
    # Nothing was stored under either hash.
    for digest in (wrong, sha(query)):
        again = await gql_post(client, None, extensions=apq(digest))
        assert request_error(again)[0] == "PERSISTED_QUERY_NOT_FOUND"


@pytest.mark.parametrize(
    "extension",
    [
        {"persistedQuery": {"version": 2, "sha256Hash": "0" * 64}},
        {"persistedQuery": {"version": 1, "sha256Hash": "xyz"}},
        {"persistedQuery": {"version": 1}},
        {"persistedQuery": "abc"},
    ],
    ids=["version-2", "bad-hash", "no-hash", "not-an-object"],
)
async def test_malformed_persisted_query_extension_is_bad_request(client, extension):
    resp = await gql_post(client, None, extensions=extension)
    assert resp.status_code == 400
    assert request_error(resp)[0] == "BAD_REQUEST"


async def test_apq_not_stored_when_the_query_does_not_parse(client):
    query = f"query Q{uuid.uuid4().hex} {{ __typename "
    resp = await gql_post(client, query, extensions=apq(sha(query)))
    assert resp.json()["errors"][0]["extensions"]["code"] == "GRAPHQL_PARSE_FAILED"
    again = await gql_post(client, None, extensions=apq(sha(query)))
    assert request_error(again)[0] == "PERSISTED_QUERY_NOT_FOUND"


async def test_apq_over_the_size_bound_runs_but_is_not_stored(make_client):
    client = make_client(apq_max_query_bytes=40)
    query = unique_query()
    assert len(query) > 40
    resp = await gql_post(client, query, extensions=apq(sha(query)))
    assert resp.json()["data"]["__typename"] == "Query"
    again = await gql_post(client, None, extensions=apq(sha(query)))
    assert request_error(again)[0] == "PERSISTED_QUERY_NOT_FOUND"


async def test_apq_turned_off_answers_not_supported(make_client):
    client = make_client(apq_enabled=False)
    query = unique_query()
    resp = await gql_post(client, None, extensions=apq(sha(query)))
    assert resp.status_code == 200
    assert request_error(resp) == ("PERSISTED_QUERY_NOT_SUPPORTED", "PersistedQueryNotSupported")
    # Plain queries are untouched.
    plain = await gql_post(client, "{ __typename }")
    assert plain.json() == {"data": {"__typename": "Query"}}


async def test_persisted_mutation_runs_over_post_never_over_get(client, make_users):
    (a,) = await make_users(1)
    query = UPDATE_BIO.replace("mutation(", f"mutation M{uuid.uuid4().hex}(")
    digest = sha(query)
    first = await gql_post(client, query, {"b": "one"}, token=a.token, extensions=apq(digest))
    assert first.json()["data"]["updateProfile"]["user"] == {"bio": "one"}
    by_hash = await gql_post(client, None, {"b": "two"}, token=a.token, extensions=apq(digest))
    assert by_hash.json()["data"]["updateProfile"]["user"] == {"bio": "two"}
    over_get = await client.get(
        "/graphql",
        params={"extensions": json.dumps(apq(digest)), "variables": json.dumps({"b": "x"})},
        headers={"Authorization": f"Bearer {a.token}"},
    )
    assert over_get.status_code == 405 and over_get.headers["allow"] == "POST"
    assert request_error(over_get)[0] == "BAD_REQUEST"
    me = await gql_post(client, "{ viewer { bio } }", token=a.token)
    assert me.json()["data"]["viewer"] == {"bio": "two"}


# --- Idempotency-Key --------------------------------------------------------------------


async def test_idempotency_key_replays_the_response_and_runs_once(client, make_users, engine):
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    first = await gql_post(client, CREATE_POST, {"c": "only once"}, token=a.token, key=key)
    assert first.status_code == 200, first.text
    assert first.json()["data"]["createPost"]["__typename"] == "CreatePostSuccess"
    assert "idempotent-replayed" not in first.headers

    second = await gql_post(client, CREATE_POST, {"c": "only once"}, token=a.token, key=key)
    assert second.status_code == 200
    assert second.content == first.content
    assert second.headers["idempotent-replayed"] == "true"
    # The draft's sf-string form of the same key is the same key.
    quoted = await gql_post(client, CREATE_POST, {"c": "only once"}, token=a.token, key=f'"{key}"')
    assert quoted.content == first.content
    assert await post_count(engine, a.id) == 1

    # Without a key (or with another one) the mutation runs again.
    other = await gql_post(
        client, CREATE_POST, {"c": "only once"}, token=a.token, key=str(uuid.uuid4())
    )
    assert (
        other.json()["data"]["createPost"]["post"]["id"]
        != (first.json()["data"]["createPost"]["post"]["id"])
    )
    assert await post_count(engine, a.id) == 2


async def test_same_key_with_another_request_is_refused(client, make_users, engine):
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    ok = await gql_post(client, CREATE_POST, {"c": "first"}, token=a.token, key=key)
    assert ok.json()["data"]["createPost"]["__typename"] == "CreatePostSuccess"
    for variables in ({"c": "second"}, {"c": "first", "extra": 1}):
        resp = await gql_post(client, CREATE_POST, variables, token=a.token, key=key)
        assert resp.status_code == 422
        assert request_error(resp)[0] == "IDEMPOTENCY_KEY_REUSED"
    assert await post_count(engine, a.id) == 1


async def test_keys_are_scoped_per_user(client, make_users, engine):
    a, b = await make_users(2)
    key = str(uuid.uuid4())
    for user in (a, b):
        resp = await gql_post(client, CREATE_POST, {"c": "same"}, token=user.token, key=key)
        assert resp.json()["data"]["createPost"]["__typename"] == "CreatePostSuccess"
        assert "idempotent-replayed" not in resp.headers
    assert await post_count(engine, a.id) == 1 and await post_count(engine, b.id) == 1


@pytest.fixture
def slow_create_post(monkeypatch):
    """createPost takes 300 ms more, so duplicates arrive while it runs."""
    original = resolvers.posts.create_post

    @functools.wraps(original)  # keeps the signature: ctx.mutate injects by parameter name
    async def slow(*args, **kwargs):
        await asyncio.sleep(0.3)
        return await original(*args, **kwargs)

    monkeypatch.setattr(resolvers.posts, "create_post", slow)


async def test_concurrent_duplicates_wait_for_the_first(
    make_client, make_users, engine, slow_create_post
):
    client = make_client(idempotency_wait_ms=5_000)
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    responses = await asyncio.gather(
        *(gql_post(client, CREATE_POST, {"c": "burst"}, token=a.token, key=key) for _ in range(6))
    )
    assert {r.status_code for r in responses} == {200}
    assert len({r.content for r in responses}) == 1
    assert sum("idempotent-replayed" in r.headers for r in responses) == 5
    assert await post_count(engine, a.id) == 1


async def test_concurrent_duplicates_without_waiting_are_in_flight(
    make_client, make_users, engine, slow_create_post
):
    client = make_client(idempotency_wait_ms=0)
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    responses = await asyncio.gather(
        *(gql_post(client, CREATE_POST, {"c": "burst"}, token=a.token, key=key) for _ in range(6))
    )
    ok = [r for r in responses if r.status_code == 200]
    busy = [r for r in responses if r.status_code == 409]
    assert len(ok) == 1 and len(busy) == 5, [r.status_code for r in responses]
    for r in busy:
        assert request_error(r)[0] == "IDEMPOTENCY_KEY_IN_FLIGHT"
        assert r.headers["retry-after"] == "1"
    assert await post_count(engine, a.id) == 1
    # Once the first finished, a retry gets its response.
    again = await gql_post(client, CREATE_POST, {"c": "burst"}, token=a.token, key=key)
    assert again.content == ok[0].content


async def test_a_request_refused_before_execution_frees_its_key(client, make_users, engine):
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    bad = await gql_post(client, CREATE_POST, {"c": 5}, token=a.token, key=key)
    assert bad.json()["errors"][0]["extensions"]["code"] in (
        "BAD_USER_INPUT",
        "GRAPHQL_VALIDATION_FAILED",
    )
    fixed = await gql_post(client, CREATE_POST, {"c": "fixed"}, token=a.token, key=key)
    assert fixed.json()["data"]["createPost"]["__typename"] == "CreatePostSuccess"
    assert await post_count(engine, a.id) == 1


async def test_typed_errors_are_replayed_too(client, make_users, engine):
    """A mutation that ran and answered a typed error keeps its answer (it executed)."""
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    too_long = "x" * 2_201
    first = await gql_post(client, CREATE_POST, {"c": too_long}, token=a.token, key=key)
    assert first.json()["data"]["createPost"]["__typename"] == "ValidationError"
    second = await gql_post(client, CREATE_POST, {"c": too_long}, token=a.token, key=key)
    assert second.content == first.content and second.headers["idempotent-replayed"] == "true"
    assert await post_count(engine, a.id) == 0


async def test_anonymous_sign_up_with_a_key_creates_one_account(client, engine):
    name = f"idem_{uuid.uuid4().hex[:12]}"
    data = {
        "username": name,
        "email": f"{name}@example.org",
        "password": TEST_PASSWORD,
        "displayName": "Idem",
    }
    key = str(uuid.uuid4())
    first = await gql_post(client, SIGN_UP, {"i": data}, key=key)
    assert first.json()["data"]["signUp"]["__typename"] == "SignUpSuccess"
    again = await gql_post(client, SIGN_UP, {"i": data}, key=key)
    assert again.content == first.content  # not UsernameTakenError: it did not run again
    async with engine.connect() as conn:
        n = await conn.scalar(text("SELECT count(*) FROM users WHERE username = :u"), {"u": name})
    assert n == 1


async def test_queries_ignore_the_key(client, make_users):
    (a,) = await make_users(1)
    key = str(uuid.uuid4())
    for _ in range(2):
        resp = await gql_post(client, "{ viewer { username } }", token=a.token, key=key)
        assert resp.json() == {"data": {"viewer": {"username": a.username}}}
        assert "idempotent-replayed" not in resp.headers


@pytest.mark.parametrize("key", ["short", "x" * 256, "has space in it 123", "ünïcödé-key-0123456"])
async def test_malformed_key_is_bad_request(client, make_users, engine, key):
    (a,) = await make_users(1)
    resp = await client.post(
        "/graphql",
        json={"query": CREATE_POST, "variables": {"c": "no"}},
        headers={
            "Authorization": f"Bearer {a.token}",
            "Idempotency-Key": key.encode(),
        },
    )
    assert resp.status_code == 400
    assert request_error(resp)[0] == "BAD_REQUEST"
    assert await post_count(engine, a.id) == 0


# --- rate limits ------------------------------------------------------------------------


def limited(make_client, window_s: float = 60.0, **budgets) -> httpx.AsyncClient:
    """A client of an app with rate limits on, over ``window_s`` (budgets as settings)."""
    return make_client(rate_limit_enabled=True, rate_limit_window_s=window_s, **budgets)


async def test_rate_limit_trips_after_n_and_recovers(make_client, make_users):
    # 3 per 15 s: one unit comes back every 5 s, more than the first 4 requests take even
    # on a loaded machine (a unit back in between would let the 4th through).
    client = limited(make_client, 15.0, rate_limit_requests=3)
    (a,) = await make_users(1)
    for _ in range(3):
        ok = await gql_post(client, "{ viewer { username } }", token=a.token)
        assert ok.status_code == 200 and "errors" not in ok.json()
    refused = await gql_post(client, "{ viewer { username } }", token=a.token)
    assert refused.status_code == 429
    code, message = request_error(refused)
    assert code == "RATE_LIMITED" and "retry" in message.lower()
    ext = refused.json()["errors"][0]["extensions"]
    assert ext["budget"] == "all" and 0 < ext["retryAfter"] <= 5
    assert refused.headers["retry-after"] == str(math.ceil(ext["retryAfter"]))
    # Another user has their own budget.
    (b,) = await make_users(1)
    assert (await gql_post(client, "{ viewer { username } }", token=b.token)).status_code == 200
    # One unit comes back every window / limit.
    await asyncio.sleep(ext["retryAfter"] + 0.05)
    back = await gql_post(client, "{ viewer { username } }", token=a.token)
    assert back.status_code == 200 and "errors" not in back.json()
    assert (await gql_post(client, "{ __typename }", token=a.token)).status_code == 429


async def test_mutation_budget_counts_root_fields(make_client, make_users):
    client = limited(make_client, rate_limit_mutations=3)
    (a,) = await make_users(1)
    two = (
        'mutation { a: updateProfile(input: {bio: "a"}) { __typename }'
        ' b: updateProfile(input: {bio: "b"}) { __typename } }'
    )
    assert "errors" not in (await gql_post(client, two, token=a.token)).json()
    refused = await gql_post(client, two, token=a.token)  # 2 + 2 > 3
    assert refused.status_code == 429
    assert refused.json()["errors"][0]["extensions"]["budget"] == "mutations"
    # Queries still pass; one more single mutation fits.
    assert (await gql_post(client, "{ viewer { bio } }", token=a.token)).status_code == 200
    one = await gql_post(client, UPDATE_BIO, {"b": "c"}, token=a.token)
    assert one.status_code == 200 and one.json()["data"]["updateProfile"]["user"]["bio"] == "c"


async def test_sign_in_budget_is_per_client_ip(make_client, settings, engine):
    ip = random_ip()
    client = limited(make_client, ip=ip, rate_limit_auth=2)
    wrong = {"u": "nobody_" + uuid.uuid4().hex[:8], "p": "wrong password"}
    for _ in range(2):
        resp = await gql_post(client, LOG_IN, wrong)
        assert resp.json()["data"]["logIn"]["__typename"] == "InvalidCredentialsError"
    refused = await gql_post(client, LOG_IN, wrong)
    assert refused.status_code == 429
    assert refused.json()["errors"][0]["extensions"]["budget"] == "auth"
    # Other requests from that address still pass; another address may sign in.
    assert (await gql_post(client, "{ __typename }")).status_code == 200
    other = limited(make_client, rate_limit_auth=2)
    assert (await gql_post(other, LOG_IN, wrong)).status_code == 200


async def test_aliased_log_ins_cost_one_each(make_client):
    client = limited(make_client, rate_limit_auth=3)
    fields = " ".join(
        f'l{i}: logIn(input: {{username: "nobody", password: "guess{i}"}}) {{ __typename }}'
        for i in range(4)
    )
    resp = await gql_post(client, "mutation { " + fields + " }")
    assert resp.status_code == 429
    assert resp.json()["errors"][0]["extensions"]["budget"] == "auth"
    # Hidden in a fragment it counts the same.
    frag = (
        "mutation { ...F } fragment F on Mutation { "
        + " ".join(
            f'l{i}: logIn(input: {{username: "n", password: "g"}}) {{ __typename }}'
            for i in range(4)
        )
        + " }"
    )
    assert (await gql_post(client, frag)).status_code == 429


# --- Redis down -------------------------------------------------------------------------


def fail_open_count(guard: str) -> float:
    return REGISTRY.get_sample_value("roost_http_guard_fail_open_total", {"guard": guard}) or 0.0


async def test_redis_down_requests_are_still_served(make_client, make_users, engine):
    client = make_client(
        redis_url="redis://127.0.0.1:1/0",  # nothing listens there
        rate_limit_enabled=True,
        rate_limit_requests=1,
        rate_limit_mutations=1,
    )
    (a,) = await make_users(1)
    before = fail_open_count("ratelimit")
    for _ in range(3):  # over the (unreachable) budget of 1
        resp = await gql_post(client, "{ viewer { username } }", token=a.token)
        assert resp.status_code == 200, resp.text
        assert resp.json() == {"data": {"viewer": {"username": a.username}}}
    assert fail_open_count("ratelimit") >= before + 3

    # A mutation with a key runs (without idempotency: fail open, counted).
    key = str(uuid.uuid4())
    resp = await gql_post(client, UPDATE_BIO, {"b": "no redis"}, token=a.token, key=key)
    assert resp.status_code == 200
    assert resp.json()["data"]["updateProfile"]["user"] == {"bio": "no redis"}

    # Persisted queries: the hash misses, the query with its hash runs.
    query = unique_query()
    miss = await gql_post(client, None, token=a.token, extensions=apq(sha(query)))
    assert request_error(miss)[0] == "PERSISTED_QUERY_NOT_FOUND"
    ran = await gql_post(client, query, token=a.token, extensions=apq(sha(query)))
    assert ran.json()["data"]["viewer"] == {"username": a.username}


# --- HTTP-level failures as GraphQL errors ----------------------------------------------


@pytest.mark.parametrize(
    ("method", "kwargs", "status"),
    [
        ("post", {"content": b"not json", "headers": {"content-type": "application/json"}}, 400),
        ("post", {"content": b'"a string"', "headers": {"content-type": "application/json"}}, 400),
        ("post", {"content": b"42", "headers": {"content-type": "application/json"}}, 400),
        ("post", {"content": b"[]", "headers": {"content-type": "application/json"}}, 400),
        ("post", {"content": b"query=x", "headers": {"content-type": "text/plain"}}, 400),
        ("post", {"json": {"variables": {}}}, 400),
        ("post", {"json": {"query": ""}}, 400),
        ("post", {"json": {"query": "{ viewer { id } }", "operationName": "Nope"}}, 400),
        ("post", {"json": {"query": "query A { __typename } query B { __typename }"}}, 400),
        ("post", {"json": {"query": "{ __typename }", "variables": [1]}}, 400),
        ("get", {"params": {"query": "{ __typename }", "variables": "{not json"}}, 400),
        ("get", {"params": {"query": "mutation { logOut(input: {}) { __typename } }"}}, 405),
        ("put", {"json": {"query": "{ __typename }"}}, 405),
        ("delete", {}, 405),
        ("patch", {"json": {"query": "{ __typename }"}}, 405),
    ],
    ids=[
        "not-json",
        "json-string",
        "json-number",
        "empty-batch",
        "wrong-content-type",
        "no-query",
        "empty-query",
        "unknown-operation",
        "several-operations-unnamed",
        "variables-not-object",
        "get-variables-not-json",
        "mutation-over-get",
        "put",
        "delete",
        "patch",
    ],
)
async def test_http_failures_are_json_graphql_errors(client, method, kwargs, status):
    resp = await getattr(client, method)("/graphql", **kwargs)
    assert resp.status_code == status, resp.text
    code, message = request_error(resp)
    assert code == "BAD_REQUEST" and message
    if status == 405:
        assert resp.headers["allow"] == ("POST" if method == "get" else "GET, POST")


async def test_named_operation_of_several_runs(client):
    resp = await client.post(
        "/graphql",
        json={"query": "query A { a: __typename } query B { b: __typename }", "operationName": "B"},
    )
    assert resp.json() == {"data": {"b": "Query"}}


# --- unit: the operation summary ---------------------------------------------------------


def test_operation_info_reads_kind_and_root_fields():
    info = operation_info(
        "mutation M { a: logIn(input: {}) { __typename } ...F ... on Mutation { signUp } }"
        " fragment F on Mutation { logIn { x } ...F }",
        None,
        4000,
    )
    assert info.kind == "mutation"
    assert sorted(info.root_fields) == ["logIn", "logIn", "signUp"]
    assert info.auth_count == 3 and info.mutation_count == 3
    assert operation_info("{ a }", None, 4000).kind == "query"
    assert operation_info("query A { a } mutation B { b }", "B", 4000).kind == "mutation"
    assert "Unknown operation" in operation_info("query A { a }", "B", 4000)
    assert operation_info("{ a ", None, 4000) is None
    assert operation_info("{ " + "a " * 10 + "}", None, 5) is None  # over max tokens


# --- one Redis round trip per signed-in request -------------------------------------------


async def test_a_signed_in_query_costs_one_redis_round_trip(make_client, make_users, monkeypatch):
    """The session check and the rate-limit charge share one round trip (a pipeline of
    the two scripts): both still happen, and each still refuses."""
    client = limited(make_client, rate_limit_requests=3)
    (a,) = await make_users(1)
    ok = await gql_post(client, "{ viewer { username } }", token=a.token)  # marks activity
    assert ok.json()["data"]["viewer"]["username"] == a.username
    trips = RoundTrips(monkeypatch)
    ok = await gql_post(client, "{ viewer { username } }", token=a.token)
    assert ok.status_code == 200 and ok.json()["data"]["viewer"]["username"] == a.username
    assert ok.headers["ratelimit-remaining"] == "1"  # charged: 3 - 2
    assert trips.count == 1
    refused = await gql_post(client, "{ __typename }", token=a.token)  # charged: 0 left
    assert refused.status_code == 200
    refused = await gql_post(client, "{ __typename }", token=a.token)
    assert refused.status_code == 429 and request_error(refused)[0] == "RATE_LIMITED"
    assert trips.count == 3


async def test_an_ended_session_is_refused_on_the_shared_round_trip(
    make_client, make_users, settings, engine
):
    from app.http_guards import HttpGuards
    from app.sessions import session_store

    client = limited(make_client, rate_limit_requests=100)
    (a,) = await make_users(1)
    assert (await gql_post(client, "{ viewer { id } }", token=a.token)).status_code == 200
    guards = HttpGuards.from_settings(settings)
    try:
        store = session_store(guards.redis, settings.token_config)
        assert store is not None and a.session_id is not None
        async with engine.begin() as conn:
            await conn.execute(
                text("UPDATE sessions SET revoked_at = now() WHERE family_id = :s"),
                {"s": a.session_id},
            )
        await store.end(a.id, [a.session_id])
    finally:
        await guards.aclose()
    refused = await gql_post(client, "{ viewer { id } }", token=a.token)
    assert refused.status_code == 401
    assert request_error(refused)[0] == "UNAUTHENTICATED"
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
