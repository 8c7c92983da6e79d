"""GraphiQL served by Roost itself (docs/operations/running.md "GraphiQL"): the page and
its :data:`ASSETS`, fetched at install time (else from unpkg.com, with a banner)."""

from __future__ import annotations

from app.graphiql.assets import ASSETS, ASSETS_DIR, Asset, assets_installed, fetch_assets
from app.graphiql.page import ASSETS_PATH, SAMPLE_QUERY, graphiql_page

__all__ = [
    "ASSETS",
    "ASSETS_DIR",
    "ASSETS_PATH",
    "SAMPLE_QUERY",
    "Asset",
    "assets_installed",
    "fetch_assets",
    "graphiql_page",
]
