"""The GraphiQL page: Roost's sample query, assets from Roost (or the CDN, said so)."""

from __future__ import annotations

import html
import json
from functools import lru_cache
from pathlib import Path

from app.graphiql.assets import ASSETS, ASSETS_DIR, assets_installed

#: Where the app serves ASSETS_DIR.
ASSETS_PATH = "/graphiql/assets"

#: The query GraphiQL opens with (and `roost run`'s banner shows).
SAMPLE_QUERY = '{ user(username: "sd2494") { username followerCount followingCount } }'

_TEMPLATE = Path(__file__).resolve().parent / "page.html"


def _editor_text(dev_password: str | None) -> str:
    lines = [
        "# Roost: the real Slashdot follow graph.",
        "# Run this query with Ctrl-Enter or the ▶ button.",
        "#",
    ]
    if dev_password is not None:
        lines += [
            "# To act as sd0, run",
            "#   mutation { logIn(input: {",
            f'#     username: "sd0", password: "{dev_password}"}})',
            "#     { ... on LogInSuccess { accessToken } } }",
            "# and put under Headers (below):",
            '#   {"Authorization": "Bearer <accessToken>"}',
            "# then try { viewer { username followingCount } }",
            "#",
        ]
    lines += [
        "",
        "{",
        '  user(username: "sd2494") {',
        "    username",
        "    followerCount",
        "    followingCount",
        "  }",
        "}",
        "",
    ]
    return "\n".join(lines)


def _script_json(value: object) -> str:
    """``value`` as JSON that is safe inside a <script> element."""
    return json.dumps(value).replace("<", "\\u003c").replace(">", "\\u003e")


@lru_cache(maxsize=4)
def graphiql_page(dev_password: str | None, local: bool | None = None) -> str:
    """The page's HTML: assets from ASSETS_PATH when ``local`` (default: installed), else
    from unpkg.com with a hint; ``dev_password`` (None in production) in its comment."""
    local = assets_installed(ASSETS_DIR) if local is None else local
    tags_css, tags_js = [], []
    for asset in ASSETS:
        if local:
            url, integrity = f"{ASSETS_PATH}/{asset.name}", ""
        else:
            url = asset.cdn_url
            integrity = f' integrity="{asset.sri}" crossorigin="anonymous"'
        if asset.name.endswith(".css"):
            tags_css.append(f'<link rel="stylesheet" href="{url}"{integrity} />')
        else:
            tags_js.append(f'<script src="{url}"{integrity}></script>')
    if local:
        hint, hint_class = "", ""
        missing = "reload the page; if it persists, run `make graphiql`."
    else:
        hint = (
            "GraphiQL's assets are not installed beside Roost, so they load from unpkg.com"
            " (this needs the internet). Run `make graphiql` to serve them from Roost."
        )
        hint_class = ' class="shown"'
        missing = (
            "they come from unpkg.com, which is unreachable (offline?). Run `make graphiql`"
            " once online to serve them from Roost."
        )
    return (
        _TEMPLATE.read_text(encoding="utf-8")
        .replace("__STYLESHEETS__", "\n    ".join(tags_css))
        .replace("__SCRIPTS__", "\n    ".join(tags_js))
        .replace("__HINT_CLASS__", hint_class)
        .replace("__HINT__", html.escape(hint))
        .replace("__MISSING__", _script_json(missing))
        .replace("__SAMPLE_QUERY__", _script_json(_editor_text(dev_password)))
        .replace("__SAMPLE_HEADERS__", _script_json(""))
    )
