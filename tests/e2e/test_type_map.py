"""The committed type map is what the server answers: schema/introspection.json is the
server's reply to the introspection query over HTTP, and schema/possibleTypes.json is
derived from that reply the way Apollo's documentation derives it."""

from __future__ import annotations

import json

from app.print_schema import (
    INTROSPECTION_FILE,
    POSSIBLE_TYPES_FILE,
    introspection_query,
)


async def test_committed_introspection_is_the_servers_answer(client):
    resp = await client.post("/graphql", json={"query": introspection_query()})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "errors" not in body, body["errors"]
    served = body["data"]
    assert served == json.loads(INTROSPECTION_FILE.read_text(encoding="utf-8")), (
        "schema/introspection.json differs from the server's: run `make schema`"
    )
    possible = {
        t["name"]: sorted(p["name"] for p in t["possibleTypes"])
        for t in served["__schema"]["types"]
        if t["possibleTypes"]
    }
    assert possible == json.loads(POSSIBLE_TYPES_FILE.read_text(encoding="utf-8"))
