"""The code's layout rules that no linter states (docs/architecture/README.md "Code
layout"); the import contracts (one-way layers, no import cycles) are import-linter's,
in ``make lint``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("app", "domain", "schema", "resolvers", "workers", "tools")
#: The command line and the embedded servers import what a command needs when it runs
#: (``roost --help`` starts without SQLAlchemy, arq or uvicorn; the embedded servers'
#: packages load only when one is started). Nowhere else.
LAZY_IMPORTS_ALLOWED = ("app/cli/", "app/embedded/")


def _sources() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))


def test_no_function_level_imports() -> None:
    """Imports sit at the top of a module: none hides a cycle inside a function."""
    bad = []
    for path in _sources():
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(LAZY_IMPORTS_ALLOWED):
            continue
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef):
                bad += [
                    f"{rel}:{node.lineno} {ast.unparse(node)}"
                    for node in ast.walk(fn)
                    if isinstance(node, ast.Import | ast.ImportFrom)
                ]
    assert not bad, "move these imports to the top of their module:\n" + "\n".join(bad)


def test_resolver_info_is_defined_once() -> None:
    """``Info`` (the resolvers' ``info`` type) is defined in schema/context.py only."""
    places = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in _sources()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Assign) and "strawberry.Info[" in ast.unparse(node.value)
    ]
    assert [place.split(":")[0] for place in places] == ["schema/context.py"], places


def test_schema_areas_name_upper_nodes_only_through_refs() -> None:
    """Below ``users``, an area names User (and below ``posts``, Post) through
    schema/refs.py, never by importing the area above it (not even for type checking):
    the areas stay one-way without function-level imports."""
    bad = []
    for path in sorted((ROOT / "schema").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        area = rel.split("/")[1] if rel.count("/") > 1 else None
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if node.module.startswith("schema.users") and area != "users":
                bad.append(f"{rel}:{node.lineno} imports {node.module}")
            if node.module.startswith("schema.posts") and area == "engagement":
                bad.append(f"{rel}:{node.lineno} imports {node.module}")
    assert not bad, "name the node through schema.refs instead:\n" + "\n".join(bad)
