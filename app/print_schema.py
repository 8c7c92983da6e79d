"""Write the GraphQL schema's SDL to ``schema/schema.graphql`` (docs/design.md: the SDL is
committed, and a test fails when code and file differ).

    python -m app.print_schema           # rewrite the file
    python -m app.print_schema --check   # exit 1 if the file is stale
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.graphql import build_schema
from app.settings import ROOT, Settings

SCHEMA_FILE: Path = ROOT / "schema" / "schema.graphql"


def render_sdl() -> str:
    """Return the SDL of the schema as the app builds it, ending with one newline.

    The schema's shape does not depend on the database, so a placeholder URL is used.
    """
    schema = build_schema(Settings(DATABASE_URL="postgresql://x/y"))
    return schema.as_str() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) :data:`SCHEMA_FILE`; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m app.print_schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if the file is stale")
    parser.add_argument("--output", type=Path, default=SCHEMA_FILE, help="where to write")
    args = parser.parse_args(argv)
    sdl = render_sdl()
    if args.check:
        current = args.output.read_text(encoding="utf-8") if args.output.exists() else None
        if current != sdl:
            print(f"{args.output} is stale: run `make schema`", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(sdl, encoding="utf-8")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
