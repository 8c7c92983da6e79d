"""Bad input gets a typed answer and changes nothing.

Mutations answer expected failures with a union member implementing ``Error``
(``message``, ``code``); requests that fail as a whole answer with a GraphQL error
carrying ``extensions.code`` (docs/design.md "GraphQL API conventions"). Every case here
also checks the database: no row, counter or outbox event may have changed.
(Expired, forged and garbage tokens are covered in test_accounts.py.)
"""

from __future__ import annotations

import base64
import json
import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

import resolvers.query
import resolvers.social
from domain.errors import PermissionDeniedError
from domain.moderation.set_user_status import set_user_status
from domain.posts.errors import NotPostAuthorError
from domain.social.errors import BlockedError
from schema.ids import to_global_id
from tests.support.users import TEST_PASSWORD

TARGET = """mutation($id: ID!) { %s(input: { userId: $id }) {
  __typename ... on Error { code message } ... on ValidationError { field } } }"""
FOLLOW = TARGET % "follow"
SIGN_UP = """mutation($input: SignUpInput!) { signUp(input: $input) {
  __typename
  ... on SignUpSuccess { user { username displayName } }
  ... on Error { code message }
  ... on ValidationError { field }
  ... on UsernameTakenError { field } } }"""
UPDATE_PROFILE = """mutation($i: UpdateProfileInput!) { updateProfile(input: $i) {
  __typename ... on UpdateProfileSuccess { user { bio } }
  ... on Error { code message } ... on ValidationError { field } } }"""
COUNTS = "query($u: String!) { user(username: $u) { followerCount followingCount } }"
PROFILE = "{ viewer { username displayName bio followerCount followingCount } }"
FOLLOWERS = """query($u: String!, $f: Int, $a: String) { user(username: $u) {
  followers(first: $f, after: $a) { totalCount edges { node { username } } } } }"""


# --- helpers ----------------------------------------------------------------------------


async def db_state(engine: AsyncEngine) -> dict[str, object]:
    """Row counts of every table a use case writes, plus the counter totals: two equal
    snapshots mean a request changed nothing."""
    async with engine.connect() as conn:
        row = (
            await conn.execute(
                text(
                    """
                    SELECT
                      (SELECT count(*) FROM users) AS users,
                      (SELECT count(*) FROM sessions) AS sessions,
                      (SELECT count(*) FROM follows) AS follows,
                      (SELECT count(*) FROM follows WHERE deleted_at IS NULL) AS live_follows,
                      (SELECT count(*) FROM blocks) AS blocks,
                      (SELECT count(*) FROM outbox) AS outbox,
                      (SELECT count(*) FROM counter_shards) AS shard_rows,
                      (SELECT coalesce(sum(value), 0) FROM counter_shards) AS counter_sum,
                      (SELECT md5(coalesce(string_agg(
                          id::text || username || display_name || bio || status, ','
                          ORDER BY id), '')) FROM users) AS profiles
                    """
                )
            )
        ).one()
    return dict(row._mapping)


async def counts(gql, user) -> tuple[int, int]:
    """(followerCount, followingCount) of ``user`` as the API reports them."""
    u = (await gql(COUNTS, {"u": user.username}))["data"]["user"]
    return u["followerCount"], u["followingCount"]


def error_code(out: dict) -> str:
    """The ``extensions.code`` shared by every GraphQL error of a whole-request failure."""
    assert out.get("errors"), out
    codes = {err.get("extensions", {}).get("code") for err in out["errors"]}
    assert len(codes) == 1, out
    return codes.pop()


def b64(raw: str) -> str:
    """Base64 of ``raw``, the shape of a hand-made Relay global id."""
    return base64.b64encode(raw.encode()).decode()


def sign_up_input(**over) -> dict:
    """A valid SignUpInput (unique username and e-mail) with ``over`` applied."""
    name = f"bad_{uuid.uuid4().hex[:12]}"
    return {
        "username": name,
        "email": f"{name}@example.org",
        "password": TEST_PASSWORD,
        "displayName": "Bad Input",
        **over,
    }


@pytest.fixture
async def graph(make_users, gql, worker):
    """Three users with some state to protect: a follows b, b follows a, c follows a;
    their events consumed (the notifications' unread counters move), so a snapshot taken
    next sees a quiet database."""
    a, b, c = await make_users(3, prefix="bad")
    for actor, target in ((a, b), (b, a), (c, a)):
        out = await gql(FOLLOW, {"id": target.gid}, token=actor.token)
        assert out["data"]["follow"]["__typename"] == "FollowSuccess"
    assert await counts(gql, a) == (2, 1)
    await worker.drain()
    return a, b, c


# --- follow graph mutations -------------------------------------------------------------


async def test_self_follow_and_self_block_are_typed_errors(gql, engine, graph):
    a, _, _ = graph
    before = await db_state(engine)
    cases = {
        "follow": ("CannotFollowSelfError", "CANNOT_FOLLOW_SELF"),
        "unfollow": ("CannotFollowSelfError", "CANNOT_FOLLOW_SELF"),
        "block": ("CannotBlockSelfError", "CANNOT_BLOCK_SELF"),
        "unblock": ("CannotBlockSelfError", "CANNOT_BLOCK_SELF"),
    }
    for mutation, (typename, code) in cases.items():
        out = await gql(TARGET % mutation, {"id": a.gid}, token=a.token)
        assert "errors" not in out, out
        res = out["data"][mutation]
        assert res["__typename"] == typename and res["code"] == code, (mutation, res)
        assert res["message"]
    assert await db_state(engine) == before
    assert await counts(gql, a) == (2, 1)


@pytest.mark.parametrize("mutation", ["follow", "unfollow", "block", "unblock"])
async def test_unknown_user_is_not_found(gql, engine, graph, mutation):
    a, _, _ = graph
    before = await db_state(engine)
    out = await gql(TARGET % mutation, {"id": to_global_id("User", uuid.uuid4())}, token=a.token)
    res = out["data"][mutation]
    assert res["__typename"] == "NotFoundError" and res["code"] == "NOT_FOUND", res
    assert await db_state(engine) == before
    assert await counts(gql, a) == (2, 1)


BAD_IDS = {
    "garbage": "garbage",
    "wrong type": b64(f"Post:{uuid.uuid4()}"),
    "not a uuid": b64("User:not-a-uuid"),
    "empty": "",
    "nul": "VXNlcjo\x00",
    "raw uuid": str(uuid.uuid4()),
}


@pytest.mark.parametrize("mutation", ["follow", "unfollow", "block", "unblock"])
@pytest.mark.parametrize("bad_id", list(BAD_IDS.values()), ids=list(BAD_IDS))
async def test_malformed_user_id_is_validation_error(gql, engine, graph, mutation, bad_id):
    a, b, _ = graph
    before = await db_state(engine)
    out = await gql(TARGET % mutation, {"id": bad_id}, token=a.token)
    assert "errors" not in out, out
    res = out["data"][mutation]
    assert res["__typename"] == "ValidationError", res
    assert res["code"] == "VALIDATION_FAILED" and res["field"] == "userId"
    assert await db_state(engine) == before
    assert await counts(gql, a) == (2, 1) and await counts(gql, b) == (1, 1)


@pytest.mark.parametrize("mutation", ["unfollow", "block", "unblock"])
@pytest.mark.parametrize("status", ["banned", "deleted"])
async def test_hidden_user_is_not_found_and_nothing_changes(
    gql, engine, make_users, settings, worker, mutation, status
):
    """A banned or deleted account answers NotFoundError, so the write must not happen."""
    a, hidden = await make_users(2, prefix="hid")
    await gql(FOLLOW, {"id": hidden.gid}, token=a.token)
    if mutation == "unblock":
        await gql(TARGET % "block", {"id": hidden.gid}, token=a.token)
    await set_user_status(engine, hidden.id, status, counter_shards=settings.counter_shards)
    await worker.drain()  # the follow's consumers are done: nothing moves during the check
    before = await db_state(engine)
    res = (await gql(TARGET % mutation, {"id": hidden.gid}, token=a.token))["data"][mutation]
    assert res["__typename"] == "NotFoundError", res
    assert await db_state(engine) == before


# --- sign-up ----------------------------------------------------------------------------

BAD_USERNAMES = {
    "too short": "ab",
    "too long": "a" * 31,
    "space": "has space",
    "hyphen": "has-hyphen",
    "emoji": "cool😎guy",
    "zero-width space": "ab\u200bc",
    "zero-width joiner": "ab\u200dcd",
    "cyrillic a": "\u0430dmin",
    "kelvin sign": "\u212aelvin",
    "fullwidth": "ａｄｍｉｎ",
    "nul": "ab\x00cd",
    "trailing newline": "abcd\n",
}


@pytest.mark.parametrize("username", list(BAD_USERNAMES.values()), ids=list(BAD_USERNAMES))
async def test_sign_up_refuses_bad_usernames(gql, engine, username):
    data = sign_up_input(username=username)
    before = await db_state(engine)
    res = (await gql(SIGN_UP, {"input": data}))["data"]["signUp"]
    assert res["__typename"] == "ValidationError", res
    assert res["field"] == "username" and res["code"] == "VALIDATION_FAILED"
    assert await db_state(engine) == before
    async with engine.connect() as conn:
        assert not await conn.scalar(
            text("SELECT count(*) FROM users WHERE email = :e"), {"e": data["email"]}
        )


async def test_kelvin_sign_cannot_claim_an_ascii_name(gql, engine):
    """U+212A lower-cases to ASCII 'k': folding it would let 'ＫELVIN' squat 'kelvin'."""
    ok = (await gql(SIGN_UP, {"input": sign_up_input(username="kelvin")}))["data"]["signUp"]
    assert ok["__typename"] == "SignUpSuccess"
    before = await db_state(engine)
    for spoof in ("\u212aelvin", "\u212aELVIN"):
        res = (await gql(SIGN_UP, {"input": sign_up_input(username=spoof)}))["data"]["signUp"]
        assert res["__typename"] == "ValidationError" and res["field"] == "username", res
    assert await db_state(engine) == before


async def test_username_case_is_folded_and_compared(gql, engine):
    res = (await gql(SIGN_UP, {"input": sign_up_input(username="MiXeD.Case_1")}))["data"]
    assert res["signUp"]["__typename"] == "SignUpSuccess"
    assert res["signUp"]["user"]["username"] == "mixed.case_1"
    async with engine.connect() as conn:
        stored = (
            (
                await conn.execute(
                    text("SELECT username FROM users WHERE username ILIKE 'mixed.case_1'")
                )
            )
            .scalars()
            .all()
        )
    assert stored == ["mixed.case_1"]
    before = await db_state(engine)
    again = (await gql(SIGN_UP, {"input": sign_up_input(username="MIXED.CASE_1")}))["data"]
    assert again["signUp"]["__typename"] == "UsernameTakenError", again
    assert again["signUp"]["code"] == "USERNAME_TAKEN" and again["signUp"]["field"] == "username"
    assert await db_state(engine) == before
    found = await gql('{ user(username: "Mixed.CASE_1") { username } }')
    assert found["data"]["user"] == {"username": "mixed.case_1"}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("displayName", ""),
        ("displayName", "   "),
        ("displayName", "x" * 51),
        ("displayName", "😀" * 51),
        ("displayName", "Nul\x00Name"),
        ("password", "short"),
        ("password", "x" * 7),
        ("password", "x" * 257),
        ("email", "not-an-email"),
        ("email", "two@@example.org"),
        ("email", "spaces in@example.org"),
        ("email", "nul\x00@example.org"),
    ],
)
async def test_sign_up_refuses_bad_fields(gql, engine, field, value):
    data = sign_up_input(**{field: value})
    before = await db_state(engine)
    res = (await gql(SIGN_UP, {"input": data}))["data"]["signUp"]
    assert res["__typename"] == "ValidationError", res
    assert res["field"] == field and res["code"] == "VALIDATION_FAILED"
    assert await db_state(engine) == before


@pytest.mark.parametrize(
    ("display_name", "stored"),
    [
        ("😀" * 50, "😀" * 50),
        ("👩\u200d👩\u200d👧" * 10, "👩\u200d👩\u200d👧" * 10),  # 50 code points, 10 graphemes
        ("e\u0301" * 50, "é" * 50),  # 100 code points, 50 after NFC
        ("x" * 50, "x" * 50),
    ],
    ids=["emoji", "zwj-sequences", "combining", "ascii"],
)
async def test_display_name_limit_counts_nfc_code_points(gql, display_name, stored):
    res = (await gql(SIGN_UP, {"input": sign_up_input(displayName=display_name)}))["data"]
    assert res["signUp"]["__typename"] == "SignUpSuccess", res
    assert res["signUp"]["user"]["displayName"] == stored


# --- profile ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("bio", "x" * 151),
        ("bio", "e\u0301" * 151),
        ("bio", "hello\x00world"),
        ("displayName", "x" * 51),
        ("displayName", ""),
    ],
)
async def test_update_profile_refuses_and_keeps_old_values(gql, engine, make_users, field, value):
    (a,) = await make_users(1, prefix="prof")
    ok = (await gql(UPDATE_PROFILE, {"i": {"bio": "old bio"}}, token=a.token))["data"]
    assert ok["updateProfile"]["__typename"] == "UpdateProfileSuccess"
    profile = (await gql(PROFILE, token=a.token))["data"]["viewer"]
    before = await db_state(engine)
    # Sending a valid value next to the bad one: the whole update is refused.
    other = {"bio": "new bio"} if field == "displayName" else {"displayName": "New Name"}
    res = (await gql(UPDATE_PROFILE, {"i": {field: value, **other}}, token=a.token))["data"]
    assert res["updateProfile"]["__typename"] == "ValidationError", res
    assert res["updateProfile"]["field"] == field
    assert await db_state(engine) == before
    assert (await gql(PROFILE, token=a.token))["data"]["viewer"] == profile
    assert profile["bio"] == "old bio"


# --- lookups ----------------------------------------------------------------------------


@pytest.mark.parametrize("username", ["", "a\x00b", "ÄDMIN", "\u212aelvin", "x" * 1000])
async def test_user_lookup_of_impossible_name_is_null(gql, username):
    out = await gql("query($u: String!) { user(username: $u) { id } }", {"u": username})
    assert out == {"data": {"user": None}}


async def test_lookalike_lookup_does_not_find_the_ascii_account(gql, engine):
    res = (await gql(SIGN_UP, {"input": sign_up_input(username="admin.real")}))["data"]
    assert res["signUp"]["__typename"] == "SignUpSuccess"
    for spoof in ("\u0430dmin.real", "ａｄｍｉｎ.real", "admin\u200b.real"):
        out = await gql("query($u: String!) { user(username: $u) { id } }", {"u": spoof})
        assert out == {"data": {"user": None}}, spoof
    ok = await gql('{ user(username: "ADMIN.REAL") { username } }')
    assert ok["data"]["user"] == {"username": "admin.real"}


# --- pagination -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("first", "after"),
    [
        (-1, None),
        (101, None),
        (2**31 - 1, None),
        (5, "garbage"),
        (5, b64("k1:yesterday|x")),
        (5, base64.urlsafe_b64encode(f"k2:2026-01-01|{uuid.uuid4()}".encode()).decode()),
    ],
)
async def test_bad_page_arguments_are_bad_user_input(gql, graph, first, after):
    a, _, _ = graph
    out = await gql(FOLLOWERS, {"u": a.username, "f": first, "a": after}, token=a.token)
    assert error_code(out) == "BAD_USER_INPUT", out
    assert out["errors"][0]["path"] == ["user", "followers"]
    assert out["data"] == {"user": {"followers": None}}  # the list is nullable (private accounts)


async def test_page_size_bounds_are_inclusive(gql, graph):
    a, _, _ = graph
    for first, n in ((0, 0), (100, 2)):
        out = await gql(FOLLOWERS, {"u": a.username, "f": first}, token=a.token)
        assert "errors" not in out, out
        page = out["data"]["user"]["followers"]
        assert page["totalCount"] == 2 and len(page["edges"]) == n


# --- whole-request failures -------------------------------------------------------------


def nested_followers(levels: int) -> str:
    """A query nesting ``followers { edges { node { … } } }`` ``levels`` times."""
    inner = "id"
    for _ in range(levels):
        inner = f"followers {{ edges {{ node {{ {inner} }} }} }}"
    return f'{{ user(username: "nobody") {{ {inner} }} }}'


async def test_query_depth_limit(gql, settings):
    assert settings.max_query_depth == 12
    shallow = await gql(nested_followers(3))  # user + 3 * 3 + id: depth 11
    assert shallow == {"data": {"user": None}}, shallow
    for levels in (4, 20):
        out = await gql(nested_followers(levels))
        assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
        assert "depth" in out["errors"][0]["message"]
        assert "data" not in out  # a request error: no data entry


async def test_alias_limit(gql, make_users, settings):
    (a,) = await make_users(1)
    assert settings.max_aliases == 30

    def aliased(n: int) -> str:
        return "{ " + " ".join(f"v{i}: viewer {{ username }}" for i in range(n)) + " }"

    ok = await gql(aliased(30), token=a.token)
    assert "errors" not in ok and len(ok["data"]) == 30
    out = await gql(aliased(31), token=a.token)
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "data" not in out


async def test_token_limit(gql, settings):
    fields = " ".join("__typename" for _ in range(settings.max_tokens + 1))
    out = await gql("{ " + fields + " }")
    assert error_code(out) == "GRAPHQL_PARSE_FAILED", out
    assert "tokens" in out["errors"][0]["message"]


@pytest.mark.parametrize(
    "query",
    [
        "{ user(username: ",
        "{ viewer { id }",
        "}",
        "mutation { follow(input:",
        "query {}",  # empty selection sets: classic grammar, and no crash in the depth limit
        "{ viewer {} }",
        "{ viewer { ... on User {} } }",
        '{ user(username: "x") { followers { edges { node {} } } } }',
    ],
)
async def test_syntax_error_is_parse_failed(gql, query):
    out = await gql(query)
    assert error_code(out) == "GRAPHQL_PARSE_FAILED", out
    assert out["errors"][0]["message"].startswith("Syntax Error")
    assert out.get("data") is None


@pytest.mark.parametrize(
    "query",
    [
        "{ nope }",
        "{ viewer { passwordHash } }",
        '{ user(username: "x", extra: 1) { id } }',
        "{ user { id } }",  # missing required argument
        "{ user(username: 5) { id } }",  # literal of the wrong type
        "query($u: String!) { viewer { id } }",  # unused variable
    ],
)
async def test_invalid_document_is_validation_failed(gql, query):
    out = await gql(query)
    assert out["errors"], out
    for err in out["errors"]:
        assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED", out
    assert out.get("data") is None


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        ("query($f: Int) { user(username: $f) { id } }", {}),  # validation: wrong var type
        (
            'query($f: Int) { user(username: "x") { followers(first: $f) { totalCount } } }',
            {"f": "x"},
        ),
        (
            'query($f: Int) { user(username: "x") { followers(first: $f) { totalCount } } }',
            {"f": 1.5},
        ),
        (
            'query($f: Int) { user(username: "x") { followers(first: $f) { totalCount } } }',
            {"f": 2**40},
        ),
        ("query($u: String!) { user(username: $u) { id } }", {}),  # required, not provided
        ("query($u: String!) { user(username: $u) { id } }", {"u": None}),
        ("query($u: String!) { user(username: $u) { id } }", {"u": ["a"]}),
        (
            "mutation($i: SignUpInput!) { signUp(input: $i) { __typename } }",
            {"i": {"username": "abc"}},
        ),  # missing input fields
        (
            "mutation($i: SignUpInput!) { signUp(input: $i) { __typename } }",
            {"i": {**sign_up_input(), "isAdmin": True}},
        ),  # unknown input field
    ],
)
async def test_bad_variables_are_client_errors(gql, engine, query, variables):
    before = await db_state(engine)
    out = await gql(query, variables)
    code = error_code(out)
    assert code in ("BAD_USER_INPUT", "GRAPHQL_VALIDATION_FAILED"), out
    assert out["errors"][0]["message"] != "Internal server error."
    assert out.get("data") is None
    assert await db_state(engine) == before


async def test_variable_coercion_error_is_bad_user_input(gql):
    out = await gql(
        'query($f: Int) { user(username: "x") { followers(first: $f) { totalCount } } }',
        {"f": "x"},
    )
    assert error_code(out) == "BAD_USER_INPUT", out
    assert "$f" in out["errors"][0]["message"]


@pytest.mark.parametrize(
    ("method", "kwargs"),
    [
        ("post", {"content": b"not json", "headers": {"content-type": "application/json"}}),
        ("post", {"json": {"variables": {}}}),  # no query
        ("post", {"json": {"query": "{ viewer { id } }", "operationName": "Nope"}}),
        ("get", {"params": {"query": "mutation { logOut(input: {}) { __typename } }"}}),
    ],
    ids=["not-json", "no-query", "unknown-operation", "mutation-over-get"],
)
async def test_malformed_http_requests_are_4xx(client, engine, method, kwargs):
    before = await db_state(engine)
    resp = await getattr(client, method)("/graphql", **kwargs)
    assert 400 <= resp.status_code < 500, (resp.status_code, resp.text)
    assert "Traceback" not in resp.text and "Internal" not in resp.text
    assert await db_state(engine) == before


# --- internal errors --------------------------------------------------------------------


def assert_masked(out: dict) -> None:
    """``out`` is a masked internal error: generic message, a code, nothing else leaked."""
    assert out["errors"], out
    err = out["errors"][0]
    assert err["message"] == "Internal server error."
    assert err["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}
    dumped = json.dumps(out)
    for leak in ("secret", "RuntimeError", "Traceback", "resolvers", ".py"):
        assert leak not in dumped, (leak, dumped)


async def test_internal_error_in_a_query_is_masked(gql, make_users, monkeypatch):
    (a,) = await make_users(1)

    async def broken(*args, **kwargs):
        raise RuntimeError("secret detail: password=hunter2 at db.internal:5432")

    monkeypatch.setattr(resolvers.query, "user_by_username", broken)
    out = await gql("query($u: String!) { user(username: $u) { id } }", {"u": a.username})
    assert_masked(out)
    assert out["errors"][0]["path"] == ["user"]
    assert out["data"] == {"user": None}
    # Everything else still works in the same request and the next one.
    mixed = await gql(
        "query($u: String!) { user(username: $u) { id } viewer { username } }",
        {"u": a.username},
        token=a.token,
    )
    assert_masked(mixed)
    assert mixed["data"]["viewer"] == {"username": a.username}


async def test_internal_error_in_a_mutation_is_masked_and_changes_nothing(
    gql, engine, graph, monkeypatch
):
    a, _, c = graph

    async def broken(*args, **kwargs):
        raise RuntimeError("secret detail")

    monkeypatch.setattr(resolvers.social, "follow_user", broken)
    before = await db_state(engine)
    out = await gql(FOLLOW, {"id": c.gid}, token=a.token)
    assert_masked(out)
    assert out["data"] is None  # the field is non-null, so the error nulls the whole data
    assert await db_state(engine) == before


@pytest.mark.parametrize(
    "exc",
    [NotPostAuthorError(), PermissionDeniedError("Refused.")],
    ids=["another-mutations-error", "an-error-with-no-type"],
)
async def test_a_domain_error_the_mutation_does_not_declare_is_masked(
    gql, engine, graph, monkeypatch, exc
):
    """follow's union does not list NotPostAuthorError, and no type answers a bare
    PermissionDeniedError: raised in it, each is an internal error, not a payload."""
    a, _, c = graph

    async def refusing(*args, **kwargs):
        raise exc

    monkeypatch.setattr(resolvers.social, "follow_user", refusing)
    before = await db_state(engine)
    out = await gql(FOLLOW, {"id": c.gid}, token=a.token)
    assert_masked(out)
    assert out["data"] is None
    assert await db_state(engine) == before


async def test_a_domain_error_the_mutation_declares_is_its_typed_payload(gql, graph, monkeypatch):
    a, _, c = graph

    async def refusing(*args, **kwargs):
        raise BlockedError()

    monkeypatch.setattr(resolvers.social, "follow_user", refusing)
    out = await gql(FOLLOW, {"id": c.gid}, token=a.token)
    assert "errors" not in out, out
    assert out["data"]["follow"]["__typename"] == "BlockedError"
    assert out["data"]["follow"]["code"] == "BLOCKED"


# --- cursors, id lists and variables ------------------------------------------------------


def raw_cursor(timestamp: str) -> str:
    raw = f"k1:{timestamp}|{uuid.uuid4()}"
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


CURSOR_PAGES = """query($u: String!, $p: ID!, $c: String) {
  viewer { notifications(first: 5, after: $c) { edges { cursor } } }
  user(username: $u) { followers(first: 5, after: $c) { totalCount }
    following(first: 5, after: $c) { totalCount } }
  likes: node(id: $p) { ... on Post { likes(first: 5, after: $c) { edges { cursor } } } }
  comments: node(id: $p) { ... on Post { comments(first: 5, after: $c) { edges { cursor } } } }
}"""
CREATE_POST = """mutation { createPost(input: { caption: "cursor target" }) {
  ... on CreatePostSuccess { post { id } } } }"""


@pytest.mark.parametrize(
    "timestamp",
    [
        "0001-01-01T00:00:00+14:00",  # UTC year 0: out of the driver's range
        "9999-12-31T23:59:59.999999-14:00",  # UTC year 10000
        "2026-01-01T00:00:00",  # naive: never issued
        "2026-01-01T00:00:00+02:00",  # another offset: never issued
        "1969-12-31T23:59:59+00:00",  # before any row
    ],
)
async def test_cursor_outside_the_issued_range_is_bad_user_input(gql, make_users, timestamp):
    (a,) = await make_users(1)
    post = (await gql(CREATE_POST, token=a.token))["data"]["createPost"]["post"]["id"]
    variables = {"u": a.username, "p": post, "c": raw_cursor(timestamp)}
    out = await gql(CURSOR_PAGES, variables, token=a.token)
    paths = {tuple(e["path"]) for e in out["errors"]}
    assert paths == {
        ("viewer", "notifications"),
        ("user", "followers"),
        ("user", "following"),
        ("likes", "likes"),
        ("comments", "comments"),
    }, out
    for err in out["errors"]:
        assert err["extensions"]["code"] == "BAD_USER_INPUT", out
    # The same pages with a cursor the server issued are fine.
    issued = raw_cursor("2026-01-01T00:00:00.000000+00:00")
    ok = await gql(CURSOR_PAGES, {**variables, "c": issued}, token=a.token)
    assert "errors" not in ok, ok


NODES = "query($ids: [ID!]!) { nodes(ids: $ids) { id } }"


async def test_nodes_takes_at_most_100_ids(gql, make_users):
    (a,) = await make_users(1)
    ok = await gql(NODES, {"ids": [a.gid] * 100})
    assert [n["id"] for n in ok["data"]["nodes"]] == [a.gid] * 100
    for ids in ([a.gid] * 101, [a.gid] * 10_000):  # within MAX_REQUEST_BYTES
        out = await gql(NODES, {"ids": ids})
        assert error_code(out) == "BAD_USER_INPUT", str(out)[:300]
    literal = "{ nodes(ids: [" + ", ".join(f'"{a.gid}"' for _ in range(101)) + "]) { id } }"
    out = await gql(literal)
    assert error_code(out) == "BAD_USER_INPUT", out
    assert "100" in out["errors"][0]["message"]


async def test_variables_count_against_the_token_limit(gql, settings, make_users):
    # 100,000 values: refused before they are coerced (this took 14 s on the old main).
    out = await gql(NODES, {"ids": ["x"] * 100_000})
    assert error_code(out) == "BAD_USER_INPUT", str(out)[:300]
    assert "MAX_TOKENS" in out["errors"][0]["message"]
    nested = {"i": {"bio": "x", "extra": [[1] * 50] * (settings.max_tokens // 50)}}
    out = await gql(
        "mutation($i: UpdateProfileInput!) { updateProfile(input: $i) { __typename } }",
        nested,
        token=(await make_users(1))[0].token,
    )
    assert error_code(out) == "BAD_USER_INPUT", str(out)[:300]


@pytest.mark.parametrize(
    ("query", "variables"),
    [
        # (`first` is nullable: its null means the default, tests/e2e/test_relay_paging.py)
        (
            "query($o: FeedOrder) { viewer { feed(first: 2, order: $o) { edges { cursor } } } }",
            {"o": None},
        ),
        (
            "mutation($c: String) { createPost(input: { caption: $c }) { __typename } }",
            {"c": None},
        ),
        (
            "mutation($m: [MediaInput!]) { createPost(input: { media: $m }) { __typename } }",
            {"m": None},
        ),
    ],
)
async def test_null_for_an_argument_with_a_default_is_bad_user_input(
    gql, engine, make_users, query, variables
):
    """The spec lets a nullable variable through validation where the argument (or
    input field) has a default; execution then refuses an explicit null. That is the
    client's error, never an INTERNAL_SERVER_ERROR, and nothing changes."""
    (user,) = await make_users(1)
    before = await db_state(engine)
    out = await gql(query, variables, token=user.token)
    assert error_code(out) == "BAD_USER_INPUT", out
    assert out["errors"][0]["message"] != "Internal server error.", out
    assert await db_state(engine) == before
