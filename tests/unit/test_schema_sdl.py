"""The committed schema files (schema/schema.graphql, introspection.json,
possibleTypes.json) match the schema the code builds."""

from __future__ import annotations

import difflib
import json

from app.print_schema import (
    INTROSPECTION_FILE,
    POSSIBLE_TYPES_FILE,
    SCHEMA_FILE,
    render_files,
)


def test_committed_schema_files_are_current():
    for path, text in render_files().items():
        assert path.exists(), f"{path.name} is missing: run `make schema`"
        committed = path.read_text(encoding="utf-8")
        if committed != text:
            diff = "".join(
                list(
                    difflib.unified_diff(
                        committed.splitlines(keepends=True),
                        text.splitlines(keepends=True),
                        f"schema/{path.name} (committed)",
                        "built from code",
                    )
                )[:60]
            )
            raise AssertionError(f"schema/{path.name} is stale: run `make schema`\n{diff}")


def test_sdl_has_the_api_conventions():
    """A guard that the file is the real schema, not an empty placeholder."""
    committed = SCHEMA_FILE.read_text(encoding="utf-8")
    for needle in ("interface Node", "interface Error", "type Query", "type Mutation"):
        assert needle in committed, needle


def test_possible_types_name_every_abstract_type():
    """Every interface and union of the SDL is in the type map, with its members."""
    possible = json.loads(POSSIBLE_TYPES_FILE.read_text(encoding="utf-8"))
    types = json.loads(INTROSPECTION_FILE.read_text(encoding="utf-8"))["__schema"]["types"]
    abstract = {t["name"] for t in types if t["kind"] in ("INTERFACE", "UNION")}
    assert set(possible) == abstract
    assert {"ForbiddenError", "NotFoundError", "ValidationError"} <= set(possible["Error"])
    assert "User" in possible["Node"] and "Post" in possible["Node"]
    assert possible["ModerationResult"] == ["ForbiddenError", "Moderation"]
