"""The documents match the code: every setting is in docs/operations/configuration.md,
every error code in docs/api/errors.md, every command and make target in
docs/operations/commands.md; nothing in the repository points at files that are not in
it (code cites ``docs/<file>.md`` by its path from the repository's root, and every
section it quotes is a heading there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from app.cli import build_parser
from app.settings import ROOT, Settings

DOCS = ROOT / "docs"
CONFIGURATION = (DOCS / "operations" / "configuration.md").read_text(encoding="utf-8")
ERRORS = (DOCS / "api" / "errors.md").read_text(encoding="utf-8")
COMMANDS = (DOCS / "operations" / "commands.md").read_text(encoding="utf-8")
SOURCES = (
    "app",
    "domain",
    "adapters",
    "schema",
    "resolvers",
    "workers",
    "tools",
    "migrations",
    "tests",
    "bench",
)
CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*$")
#: Calls whose second positional argument is an ``extensions.code``.
CODE_CALLS = {"error", "graphql_error_response", "PersistedQueryError", "IdempotencyError"}


def python_files(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (ROOT / pkg).rglob("*.py"))


def test_every_setting_is_documented() -> None:
    missing = [
        f.alias
        for f in Settings.model_fields.values()
        if f.alias and f"`{f.alias}`" not in CONFIGURATION
    ]
    assert not missing, f"settings missing from docs/operations/configuration.md: {missing}"


def error_codes() -> set[str]:
    """Every error code the code can send: ``"code": "X"`` in a dict (extensions),
    ``code = "X"`` (typed domain errors, the registry of union members' codes),
    ``code="X"``, and the code argument of the HTTP guards' refusals."""
    codes: set[str] = set()

    def add(node: ast.AST | None) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if CODE.match(node.value) and len(node.value) > 3:
                codes.add(node.value)

    packages = ("app", "domain", "adapters", "schema", "resolvers", "workers", "tools")
    for path in python_files(*packages):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if isinstance(key, ast.Constant) and key.value == "code":
                        add(value)
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "code" for t in targets):
                    add(node.value)
            elif isinstance(node, ast.keyword) and node.arg == "code":
                add(node.value)
            elif isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", None))
                if name in CODE_CALLS and len(node.args) >= 2:
                    add(node.args[1])
    codes.discard("DOMAIN_ERROR")  # the abstract base's placeholder
    return codes


def test_every_error_code_is_documented() -> None:
    codes = error_codes()
    assert {"FORBIDDEN", "SERVICE_UNAVAILABLE", "RATE_LIMITED", "NOT_FOUND"} <= codes, codes
    missing = sorted(c for c in codes if f"`{c}`" not in ERRORS)
    assert not missing, f"error codes missing from docs/api/errors.md: {missing}"


def test_every_command_and_make_target_is_documented() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = [f"roost {name}" for name in sub.choices if f"roost {name}" not in COMMANDS]
    for name, p in sub.choices.items():
        for action in p._actions:
            for choice in action.choices or () if action.dest == "action" else ():
                if f"roost {name} {choice}" not in COMMANDS and f"{choice}" not in COMMANDS:
                    missing.append(f"roost {name} {choice}")
    makefile = (ROOT / "Makefile").read_text()
    phony = re.search(r"^\.PHONY:(.*)$", makefile, re.M)
    assert phony is not None
    missing += [f"make {t}" for t in phony.group(1).split() if f"make {t}" not in COMMANDS]
    assert not missing, f"missing from docs/operations/commands.md: {missing}"


REFERENCE = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*(?:seeds/[\w.-]+\.md|design\.md|layout\.md))")


def text_files() -> list[Path]:
    files = python_files(*SOURCES)
    files += sorted(ROOT.glob("*.md")) + sorted((ROOT / "docs").rglob("*.md"))
    files += [ROOT / "data" / "README.md", ROOT / "Makefile", ROOT / "docker-compose.yml"]
    return [f for f in files if f.exists()]


#: Paths of the workplace beside a checkout (its design folder and data), which a user's
#: clone does not have; spelled in pieces so this test does not name them itself.
OUTSIDE_PATHS = tuple(
    "/".join(parts) for parts in (("..", "shared"), ("", "work", "shared"), ("shared", "data"))
)


@pytest.mark.parametrize("path", text_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_reference_to_a_file_outside_the_repository(path: Path) -> None:
    if path == Path(__file__):
        return
    text = path.read_text(encoding="utf-8")
    for bad in OUTSIDE_PATHS:
        assert bad not in text, f"{path.relative_to(ROOT)} refers to {bad}"
    for ref in REFERENCE.findall(text):
        candidates = [ROOT / ref, ROOT / "docs" / ref, path.parent / ref]
        assert any(c.exists() for c in candidates), f"{path.relative_to(ROOT)}: {ref} is not here"


#: ``<file> "Section"`` in code: a document by its path from the root (``README`` alone:
#: README.md or any guide under docs/, where its sections moved).
CITATION = re.compile(
    r'((?:[\w.-]+/)*(?:[\w.-]+\.md)|\bREADME\b)(?::|,)?\s+"([^"\n]{1,80}(?:\n[^"\n]{1,80})?)"'
)


def headings(path: Path) -> list[str]:
    return [
        line.lstrip("#").strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.startswith("#")
    ]


def words(path: Path) -> str:
    return " ".join(path.read_text(encoding="utf-8").split())


def cites(doc: Path, name: str) -> bool:
    return any(h.startswith(name) for h in headings(doc)) or name in words(doc)


def guides() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*/**/*.md"))]


def test_code_cites_documents_by_their_path_and_sections_that_exist() -> None:
    """``docs/design.md "Home feed"`` names docs/design.md and one of its headings (or
    the start of one); a quotation in quotes is found in the document's text. A bare
    ``design.md`` or ``seeds/…`` (a file outside the repository, once) fails."""
    bad: list[str] = []
    for path in python_files(*SOURCES):
        if path == Path(__file__):
            continue
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(ROOT)
        for ref in REFERENCE.findall(text):
            if not (ROOT / ref).exists():
                bad.append(f"{where}: {ref} is not a path from the repository's root")
        for ref, section in CITATION.findall(text):
            docs = guides() if ref == "README" else [ROOT / ref]
            if not all(doc.exists() and doc.suffix == ".md" for doc in docs):
                continue  # a file the check above (or another test) answers for
            name = " ".join(section.split())
            if not any(cites(doc, name) for doc in docs):
                bad.append(f'{where}: {ref} has no section (or words) "{name}"')
    assert not bad, "\n".join(bad)
