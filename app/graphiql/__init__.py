"""GraphiQL served by Roost itself: the page at ``GET /graphql`` (a browser) and its
assets at ``/graphiql/assets/`` from this folder, so it works without the internet.

The assets (React, GraphiQL and its explorer plugin, :data:`ASSETS`) are fetched at
install time (``make venv``, ``make graphiql``: ``python -m app.graphiql fetch``) with
``npm pack`` when node is present, else straight from the npm CDN, and checked against
their SRI hashes. Until they are there the page loads them from unpkg.com and says so
in a banner. The page opens with Roost's sample query (:data:`SAMPLE_QUERY`).
"""

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
