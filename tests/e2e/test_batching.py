"""Array batching over POST (BATCH_ENABLED, BATCH_MAX_OPERATIONS): off by default; on,
a batch's operations run in order, each as its own request (admission, rate-limit
charge, dataloaders), within the batch limit; a malformed batch is a 400."""

from __future__ import annotations

import random

import httpx
import pytest

from app.asgi import create_app

VIEWER = "{ viewer { username } }"
COUNT = "query($u: String!) { user(username: $u) { followerCount } }"
FOLLOW = """mutation($id: ID!) { follow(input: { userId: $id }) { __typename } }"""


@pytest.fixture
async def make_client(settings, engine):
    clients: list[httpx.AsyncClient] = []

    def _make(**overrides) -> httpx.AsyncClient:
        app = create_app(settings.model_copy(update=overrides), engine=engine)
        ip = "10." + ".".join(str(random.randint(1, 254)) for _ in range(3))
        transport = httpx.ASGITransport(app=app, client=(ip, 40_000))
        c = httpx.AsyncClient(transport=transport, base_url="http://roost.test")
        clients.append(c)
        return c

    yield _make
    for c in clients:
        await c.aclose()


async def test_batching_is_off_by_default(client):
    resp = await client.post("/graphql", json=[{"query": "{ __typename }"}])
    assert resp.status_code == 400
    (error,) = resp.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST" and "batching is off" in error["message"]


async def test_a_batch_runs_in_order_each_operation_its_own(make_client, make_users):
    me, star = await make_users(2, prefix="bt")
    c = make_client(batch_enabled=True)
    resp = await c.post(
        "/graphql",
        json=[
            {"query": COUNT, "variables": {"u": star.username}},
            {"query": FOLLOW, "variables": {"id": star.gid}},
            {"query": COUNT, "variables": {"u": star.username}},
            {"query": "{ nope }"},
            {"query": VIEWER},
        ],
        headers={
            "Authorization": f"Bearer {me.token}",
            "Accept": "application/graphql-response+json",
        },
    )
    assert resp.status_code == 200, resp.text
    before, followed, after, bad, viewer = resp.json()
    assert before == {"data": {"user": {"followerCount": 0}}}
    assert followed == {"data": {"follow": {"__typename": "FollowSuccess"}}}
    assert after == {"data": {"user": {"followerCount": 1}}}  # the mutation ran first
    assert (
        "data" not in bad and bad["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    )
    assert viewer == {"data": {"viewer": {"username": me.username}}}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ([], "1 to 3 operations; this one has 0"),
        ([{"query": "{ __typename }"}] * 4, "1 to 3 operations; this one has 4"),
        ([{"query": "{ __typename }"}, "x"], "must be a JSON object"),
        ([{"query": 5}], "`query` must be a string"),
        ([{"query": "{ __typename }", "operationName": 3}], "operationName must be a string"),
    ],
)
async def test_a_malformed_batch_is_a_bad_request(make_client, body, says):
    c = make_client(batch_enabled=True, batch_max_operations=3)
    resp = await c.post("/graphql", json=body)
    assert resp.status_code == 400, resp.text
    (error,) = resp.json()["errors"]
    assert error["extensions"]["code"] == "BAD_REQUEST" and says in error["message"], error


async def test_an_idempotency_key_is_for_one_mutation(make_client, make_users):
    (me,) = await make_users(1, prefix="bt")
    c = make_client(batch_enabled=True)
    resp = await c.post(
        "/graphql",
        json=[{"query": VIEWER}],
        headers={"Authorization": f"Bearer {me.token}", "Idempotency-Key": "k-1"},
    )
    assert resp.status_code == 400 and "Idempotency-Key" in resp.json()["errors"][0]["message"]


async def test_each_operation_of_a_batch_counts_against_the_rate_limit(make_client, make_users):
    (me,) = await make_users(1, prefix="bt")
    c = make_client(batch_enabled=True, rate_limit_enabled=True, rate_limit_requests=5)
    auth = {"Authorization": f"Bearer {me.token}"}
    first = await c.post("/graphql", json=[{"query": VIEWER}] * 3, headers=auth)
    assert first.status_code == 200
    assert first.headers["ratelimit-remaining"] == "2"
    second = await c.post("/graphql", json=[{"query": VIEWER}] * 3, headers=auth)
    assert second.status_code == 429  # the third operation is the sixth request
    assert second.json()["errors"][0]["extensions"]["code"] == "RATE_LIMITED"
