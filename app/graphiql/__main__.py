"""``python -m app.graphiql fetch [--force]``: put GraphiQL's assets beside Roost; exits 0
without npm or the internet (GraphiQL then loads them from the CDN, and says so)."""

from __future__ import annotations

import sys

from app.graphiql.assets import ASSETS_DIR, fetch_assets


def main(argv: list[str]) -> int:
    if not argv or argv[0] != "fetch":
        print("usage: python -m app.graphiql fetch [--force]", file=sys.stderr)
        return 2
    try:
        how = fetch_assets(force="--force" in argv)
    except RuntimeError as exc:
        print(
            f"GraphiQL assets not fetched ({exc}).\n"
            "  GraphiQL will load them from unpkg.com, which needs the internet;"
            " `make graphiql` fetches them once online (npm or direct).",
            file=sys.stderr,
        )
        return 0
    if how != "present":
        print(f"GraphiQL assets fetched with {how} into {ASSETS_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
