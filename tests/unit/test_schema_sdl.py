"""The committed SDL (schema/schema.graphql) matches the schema the code builds."""

from __future__ import annotations

import difflib

from app.graphql import build_schema
from app.print_schema import SCHEMA_FILE
from app.settings import Settings


def test_committed_sdl_is_current():
    sdl = build_schema(Settings(DATABASE_URL="postgresql://x/y")).as_str() + "\n"
    assert SCHEMA_FILE.exists(), "schema/schema.graphql is missing: run `make schema`"
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    if committed != sdl:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    sdl.splitlines(keepends=True),
                    "schema/schema.graphql (committed)",
                    "schema built from code",
                )
            )[:60]
        )
        raise AssertionError(f"schema/schema.graphql is stale: run `make schema`\n{diff}")


def test_sdl_has_the_api_conventions():
    """A guard that the file is the real schema, not an empty placeholder."""
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    for needle in ("interface Node", "interface Error", "type Query", "type Mutation"):
        assert needle in committed, needle
