"""INTROSPECTION_ENABLED and GRAPHIQL_ENABLED (off by default in production): with
introspection off, ``__schema`` and ``__type`` fail validation on every path (HTTP POST
and GET, graphql-transport-ws, graphql-ws) while ``__typename`` answers; with GraphiQL
off a browser's GET /graphql is 404."""

from __future__ import annotations

import asyncio
import json

import httpx
from websockets.asyncio.client import connect

from app.asgi import create_app
from app.settings import Settings
from tests.support.polling import PATIENCE_S
from tests.support.servers import serving

SCHEMA = "{ __schema { queryType { name } } }"
TYPE = '{ __type(name: "Query") { name } }'
DISABLED = "introspection has been disabled"


def test_production_turns_both_off_by_default_and_settings_override() -> None:
    prod = Settings.model_construct(
        env="production", graphiql_enabled=None, introspection_enabled=None
    )
    assert (prod.graphiql_on, prod.introspection_on) == (False, False)
    dev = Settings.model_construct(
        env="development", graphiql_enabled=None, introspection_enabled=None
    )
    assert (dev.graphiql_on, dev.introspection_on) == (True, True)
    forced = Settings.model_construct(
        env="production", graphiql_enabled=True, introspection_enabled=True
    )
    assert (forced.graphiql_on, forced.introspection_on) == (True, True)


async def _ws_first(
    url: str, protocol: str, query: str, token: str, operation: str | None = None
) -> dict:
    async with connect(url, subprotocols=[protocol]) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        )
        ack = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
        assert ack["type"] == "connection_ack", ack
        kind = "subscribe" if protocol == "graphql-transport-ws" else "start"
        await ws.send(
            json.dumps(
                {"type": kind, "id": "1", "payload": {"query": query, "operationName": operation}}
            )
        )
        while True:
            msg = json.loads(await asyncio.wait_for(ws.recv(), PATIENCE_S))
            if msg["type"] != "ka":
                return msg


async def test_introspection_off_refuses_schema_and_type_on_every_path(
    settings, engine, make_users
) -> None:
    (a,) = await make_users(1)
    app = create_app(
        settings.model_copy(update={"introspection_enabled": False, "graphiql_enabled": False}),
        engine=engine,
    )
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        for query in (SCHEMA, TYPE, "{ __typename a: __schema { types { name } } }"):
            post = await c.post(
                "/graphql",
                json={"query": query},
                headers={"Accept": "application/graphql-response+json"},
            )
            assert post.status_code == 400, post.text
            err = post.json()["errors"][0]
            assert DISABLED in err["message"] and "'__" in err["message"]
            assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
            assert "data" not in post.json()
            get = await c.get(
                "/graphql",
                params={"query": query},
                headers={"Accept": "application/graphql-response+json"},
            )
            assert get.status_code == 400, get.text
            assert DISABLED in get.json()["errors"][0]["message"]
            ws_url = url.replace("http", "ws") + "/graphql"
            for protocol in ("graphql-transport-ws", "graphql-ws"):
                # graphql-ws runs only subscriptions: the introspection sits in another
                # operation of the document, which is validated as a whole.
                document = f"subscription S {{ feedItemAdded {{ id }} }} query Q {query}"
                for doc, name in ((query, None), (document, "S")):
                    if protocol == "graphql-ws" and name is None:
                        continue
                    msg = await _ws_first(ws_url, protocol, doc, a.token, name)
                    assert msg["type"] in ("error", "next"), msg
                    assert DISABLED in json.dumps(msg), (protocol, msg)

        ok = await c.post("/graphql", json={"query": "{ __typename }"})
        assert ok.json() == {"data": {"__typename": "Query"}}
        ws_url = url.replace("http", "ws") + "/graphql"
        msg = await _ws_first(ws_url, "graphql-transport-ws", "{ __typename }", a.token)
        assert msg["payload"] == {"data": {"__typename": "Query"}}, msg

        page = await c.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 404
        assert "graphiql" not in page.text.lower()


async def test_outside_production_introspection_and_graphiql_answer(settings, engine) -> None:
    app = create_app(settings, engine=engine)
    async with serving(app) as url, httpx.AsyncClient(base_url=url) as c:
        post = await c.post("/graphql", json={"query": SCHEMA})
        assert post.json() == {"data": {"__schema": {"queryType": {"name": "Query"}}}}
        page = await c.get("/graphql", headers={"Accept": "text/html"})
        assert page.status_code == 200
        assert "graphiql" in page.text.lower()
