"""Write the GraphQL schema's committed files (docs/design.md: the SDL is committed, and a
test fails when code and files differ):

- ``schema/schema.graphql``: the SDL, every list in it sorted by name;
- ``schema/introspection.json``: the introspection result (``{"__schema": …}``) that
  urql's graphcache (``schema``), GraphQL Code Generator and relay tooling read;
- ``schema/possibleTypes.json``: each interface and union with the object types that
  implement or belong to it (``{"Error": ["BlockedError", …], …}``), Apollo Client's
  ``InMemoryCache({ possibleTypes })``.

    python -m app.print_schema           # rewrite the files
    python -m app.print_schema --check   # exit 1 if one is stale
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from graphql import build_schema as schema_from_sdl
from graphql import (
    get_introspection_query,
    introspection_from_schema,
    lexicographic_sort_schema,
    print_schema,
)

from app.graphql import build_schema
from app.settings import ROOT, Settings

SCHEMA_DIR: Path = ROOT / "schema"
SCHEMA_FILE: Path = SCHEMA_DIR / "schema.graphql"
INTROSPECTION_FILE: Path = SCHEMA_DIR / "introspection.json"
POSSIBLE_TYPES_FILE: Path = SCHEMA_DIR / "possibleTypes.json"

#: The introspection options of the committed file: all graphql-js 16's
#: ``getIntrospectionQuery`` can ask for.
INTROSPECTION_OPTIONS: dict[str, bool] = {
    "descriptions": True,
    "specified_by_url": True,
    "directive_is_repeatable": True,
    "schema_description": True,
    "input_value_deprecation": True,
    "experimental_directive_deprecation": False,
    "one_of": False,
}


def introspection_query() -> str:
    """The introspection document the committed file answers."""
    return get_introspection_query(**INTROSPECTION_OPTIONS)


def _schema():
    # The schema's shape does not depend on the database: a placeholder URL.
    return build_schema(Settings(DATABASE_URL="postgresql://x/y"))


def possible_types(introspection: dict[str, Any]) -> dict[str, list[str]]:
    """Apollo's ``possibleTypes`` of an introspection result, sorted."""
    return {
        t["name"]: sorted(p["name"] for p in t["possibleTypes"])
        for t in sorted(introspection["__schema"]["types"], key=lambda t: t["name"])
        if t.get("possibleTypes")
    }


def _json(value: object) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False) + "\n"


def render_files() -> dict[Path, str]:
    """Each committed file with the text it must hold."""
    schema = _schema()
    introspection = dict(introspection_from_schema(schema._schema, **INTROSPECTION_OPTIONS))
    return {
        # Sorted by name (types, fields, arguments, enum values), as linters expect.
        SCHEMA_FILE: print_schema(lexicographic_sort_schema(schema_from_sdl(schema.as_str())))
        + "\n",
        INTROSPECTION_FILE: _json(introspection),
        POSSIBLE_TYPES_FILE: _json(possible_types(introspection)),
    }


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) the files; return the exit status."""
    parser = argparse.ArgumentParser(prog="python -m app.print_schema", description=__doc__)
    parser.add_argument("--check", action="store_true", help="fail if a file is stale")
    args = parser.parse_args(argv)
    stale = 0
    for path, text in render_files().items():
        if args.check:
            current = path.read_text(encoding="utf-8") if path.exists() else None
            if current != text:
                print(f"{path} is stale: run `make schema`", file=sys.stderr)
                stale = 1
            continue
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    return stale


if __name__ == "__main__":
    sys.exit(main())
