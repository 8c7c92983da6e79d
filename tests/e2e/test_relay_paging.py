"""Relay paging arguments on every connection (docs/api/clients.md "Paging"): ``first``
is a nullable Int with its default, so relay-compiler accepts ``$first: Int = 20`` and
an explicit null means the default; the page-size limit holds whatever the spelling."""

from __future__ import annotations

import uuid

from tests.support.actions import post
from tests.support.documents import COMMENT, FOLLOW, LIKE
from tests.support.lists import LISTS, connection
from tests.support.subscriptions import served
from tests.support.ws import TRANSPORT_WS, WSClient

SELECTION = "{ edges { cursor } pageInfo { endCursor hasNextPage } }"
ARGS_OF = """{ __schema { types { name fields { name args { name defaultValue
  type { kind name ofType { name } } } } } } }"""


async def test_every_first_is_a_nullable_int_with_its_default(gql):
    schema = (await gql(ARGS_OF))["data"]["__schema"]
    firsts = [
        (t["name"], f["name"], a)
        for t in schema["types"]
        if not t["name"].startswith("__")
        for f in t["fields"] or ()
        for a in f["args"]
        if a["name"] in ("first", "last")
    ]
    assert len(firsts) >= 18
    for type_name, field, arg in firsts:
        where = f"{type_name}.{field}({arg['name']})"
        assert arg["type"] == {"kind": "SCALAR", "name": "Int", "ofType": None}, where
        if arg["name"] == "first":
            assert arg["defaultValue"] is not None and int(arg["defaultValue"]) > 0, where


async def seeded(gql, make_users, worker) -> tuple[dict, dict]:
    """Every list of test_cursor_lists with two entries or more: its variables and its
    reader."""
    author, fan, other = await make_users(3, prefix="pg")
    tag = f"t{uuid.uuid4().hex[:10]}"
    for target in (author, other):
        assert "errors" not in await gql(FOLLOW, {"id": target.gid}, token=fan.token)
    assert "errors" not in await gql(FOLLOW, {"id": author.gid}, token=other.token)
    posts = [await post(gql, author, f"#{tag} number {i}") for i in range(3)]
    await post(gql, other, "another author's post")
    for p in posts:
        for u in (fan, other):
            assert "errors" not in await gql(LIKE, {"id": p}, token=u.token)
            assert "errors" not in await gql(COMMENT, {"id": posts[0], "body": "hi"}, token=u.token)
    await worker.drain()
    values = {"u": author.username, "w": other.username, "f": fan.username, "p": posts[0]}
    values["t"] = tag
    return values, {"notifications": author, "feed": fan}


def document(name: str, args: str, declared: str = "") -> str:
    query, _ = LISTS[name]
    return query.replace("query(", f"query({declared}" if declared else "query(", 1) % (
        args,
        SELECTION,
    )


def variables_of(name: str, values: dict, **more) -> dict:
    _, key = LISTS[name]
    var = "u" if key in ("w", "f") else key
    return ({var: values[key]} if key else {}) | {"a": None} | more


async def test_an_explicit_null_first_is_the_default_and_limits_hold(
    gql, make_users, worker, settings
):
    values, readers = await seeded(gql, make_users, worker)
    limit = settings.max_page_size
    for name in LISTS:
        token = readers.get(name, readers["feed"]).token
        variables = variables_of(name, values)
        default = await gql(document(name, "after: $a"), variables, token=token)
        assert "errors" not in default, (name, default)
        assert len(connection(default["data"])["edges"]) >= 1, name
        # relay-compiler's spelling: a nullable variable with a default, sent as null
        declared = "$n: Int = 20, "
        for first in (None, 20):
            out = await gql(
                document(name, "first: $n, after: $a", declared),
                variables | {"n": first},
                token=token,
            )
            assert out == default, (name, first, out)
        literal = await gql(document(name, "first: null, after: $a"), variables, token=token)
        assert literal == default, (name, literal)
        for bad in (limit + 1, -1):
            out = await gql(
                document(name, "first: $n, after: $a", declared),
                variables | {"n": bad},
                token=token,
            )
            assert [e["extensions"]["code"] for e in out["errors"]] == ["BAD_USER_INPUT"], out


async def test_an_explicit_null_first_is_the_default_over_websocket(engine, make_users, settings):
    me, fan = await make_users(2, prefix="pw")
    query = "query($f: Int) { user(username: $u) { followers(first: $f) { totalCount } } }"
    query = query.replace("query($f: Int)", "query($f: Int, $u: String!)")
    async with served(settings, engine) as url:
        client = await WSClient.open(url, TRANSPORT_WS, fan.token)
        try:
            for first in (None, settings.max_page_size + 1):
                await client.subscribe(query, {"f": first, "u": me.username})
                msg = await client.message()
                if first is None:
                    assert msg["type"] == "next", msg
                    assert msg["payload"] == {"data": {"user": {"followers": {"totalCount": 0}}}}
                    assert (await client.message())["type"] == "complete"
                else:
                    errors = msg["payload"].get("errors") or msg["payload"]
                    assert errors[0]["extensions"]["code"] == "BAD_USER_INPUT", msg
                    if msg["type"] == "next":
                        assert (await client.message())["type"] == "complete"
        finally:
            await client.close()
