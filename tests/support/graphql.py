"""Posting GraphQL documents to the app in-process (httpx's ASGI transport)."""

from __future__ import annotations

from dataclasses import dataclass

import httpx


@dataclass
class GQL:
    """Posts GraphQL documents; ``token`` adds ``Authorization: Bearer``."""

    client: httpx.AsyncClient

    async def __call__(
        self, query: str, variables: dict | None = None, *, token: str | None = None
    ) -> dict:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = await self.client.post(
            "/graphql", json={"query": query, "variables": variables or {}}, headers=headers
        )
        assert resp.status_code in (200, 400, 401), resp.text
        return resp.json()
