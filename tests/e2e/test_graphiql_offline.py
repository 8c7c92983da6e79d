"""GraphiQL works without the internet: headless Chromium, every host but 127.0.0.1
unreachable, opens /graphql on a real server, sees the schema in the documentation
explorer and runs the sample query it opens with. The screenshot is kept in
``.test-output/graphiql/`` (ROOST_TEST_OUTPUT overrides the folder).

Skips where Chromium is not installed (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sqlalchemy import text

from app.graphiql import assets_installed, fetch_assets
from app.settings import ROOT
from tests.support.browser import chromium, chromium_path
from tests.support.servers import serving

pytestmark = pytest.mark.skipif(
    chromium_path() is None,
    reason="Chromium is not installed (Debian: apt-get install chromium): "
    "the offline GraphiQL test needs a real browser",
)

OUTPUT = Path(os.environ.get("ROOST_TEST_OUTPUT", ROOT / ".test-output")) / "graphiql"

EDITOR = "document.querySelector('.graphiql-query-editor .CodeMirror')"
RESPONSE = "document.querySelector('.graphiql-response .CodeMirror')"


@pytest.fixture
async def served(app, engine):
    """The test app on a real port (uvicorn in this loop), with user sd2494 present."""
    if not assets_installed():
        try:
            await asyncio.to_thread(fetch_assets)
        except RuntimeError as exc:
            pytest.skip(f"GraphiQL's assets are not installed and could not be fetched: {exc}")
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO users (id, username, display_name, password_hash)"
                " VALUES (gen_random_uuid(), 'sd2494', 'Slashdot user 2494', 'x')"
                " ON CONFLICT (username) DO NOTHING"
            )
        )
    async with serving(app) as url:
        yield url


async def test_graphiql_renders_the_schema_and_runs_the_sample_query_offline(served) -> None:
    async with chromium(f"{served}/graphql", offline=True) as page:
        # The editor opens with Roost's sample query, not the framework's welcome text.
        opening = await page.wait_for(f"{EDITOR} && {EDITOR}.CodeMirror.getValue()")
        assert 'user(username: "sd2494")' in opening and "Welcome to GraphiQL" not in opening

        # The schema came through introspection: the docs explorer lists the root types.
        await page.evaluate(
            "document.querySelector('[aria-label=\"Show Documentation Explorer\"]').click()"
        )
        docs = await page.wait_for(
            "(() => { const d = document.querySelector('.graphiql-doc-explorer');"
            " const t = d ? d.innerText : '';"
            " return t.includes('Mutation') && t.includes('Subscription') ? t : ''; })()"
        )
        assert "Query" in docs

        # Run it: the answer shows in the response pane.
        await page.evaluate("document.querySelector('.graphiql-execute-button').click()")
        answer = await page.wait_for(
            f"{RESPONSE} && {RESPONSE}.CodeMirror.getValue().includes('sd2494')"
            f" && {RESPONSE}.CodeMirror.getValue()"
        )
        assert '"username": "sd2494"' in answer and '"followerCount"' in answer
        assert "errors" not in answer

        # Nothing came from anywhere but Roost.
        loaded = await page.evaluate("performance.getEntriesByType('resource').map(e => e.name)")
        assert loaded and all(u.startswith(served) for u in loaded), loaded
        hint_shown = await page.evaluate(
            "document.getElementById('roost-cdn-hint').classList.contains('shown')"
        )
        assert hint_shown is False
        shot = await page.screenshot(OUTPUT / "graphiql-offline.png")
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


async def test_without_local_assets_the_page_says_it_loads_them_from_the_cdn(client) -> None:
    from app.graphiql import graphiql_page

    page = graphiql_page("pw", local=False)
    assert "https://unpkg.com/graphiql@" in page and 'class="shown"' in page
    assert "make graphiql" in page
    local = graphiql_page("pw", local=True)
    assert "unpkg.com" not in local and "/graphiql/assets/graphiql.min.js" in local
    # The app serves its page and the assets it names.
    resp = await client.get("/graphql", headers={"Accept": "text/html"})
    assert resp.status_code == 200 and "Roost" in resp.text
    if assets_installed():
        asset = await client.get("/graphiql/assets/react.production.min.js")
        assert asset.status_code == 200 and len(asset.content) == 10_737
