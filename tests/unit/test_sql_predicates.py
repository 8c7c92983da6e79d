"""The row invariants are spelled once (domain/visibility/predicates.py): no module
retypes the raw predicate of a live row or an active account."""

from __future__ import annotations

import os
import re
from pathlib import Path

from domain.visibility.predicates import is_active, is_live

ROOT = Path(__file__).resolve().parents[2]
DEFINING = "domain/visibility/predicates.py"
RAW = re.compile(r"\bdeleted_at\s+IS\s+NULL\b|\bstatus\s*=\s*'active'", re.IGNORECASE)
#: Where the raw predicate stays: a migration is the DDL as it was applied (it must not
#: change when the fragment does), and a test's SQL is an oracle written independently of
#: the code it checks.
ALLOWED = ("migrations/", "tests/")


def _python_files() -> list[str]:
    """Every module of the repository (hidden folders such as .venv and .data left out)."""
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d != "node_modules"]
        found += [(Path(folder) / f).relative_to(ROOT).as_posix() for f in files]
    return sorted(f for f in found if f.endswith(".py"))


def retyped(text: str) -> list[int]:
    """The lines of ``text`` where the raw predicate is spelled out."""
    return [text.count("\n", 0, m.start()) + 1 for m in RAW.finditer(text)]


def test_the_raw_predicates_are_spelled_only_in_their_module() -> None:
    files = _python_files()
    assert DEFINING in files and "domain/feed/sources.py" in files  # the walk sees the code
    bad = [
        f"{rel}:{line}"
        for rel in files
        if rel != DEFINING and not rel.startswith(ALLOWED)
        for line in retyped((ROOT / rel).read_text(encoding="utf-8"))
    ]
    assert not bad, "use domain.visibility.predicates (is_live, is_active):\n" + "\n".join(bad)


def test_the_check_finds_every_spelling_of_the_predicates() -> None:
    sql = 'f"""SELECT 1 FROM follows f WHERE f.deleted_at is null\n  AND u.status=\'active\'"""'
    assert retyped(sql) == [1, 2]
    assert retyped(f"WHERE {is_live('p')} AND {is_active('a')} AND {is_live()}") == [1, 1, 1]
    assert retyped("WHERE p.deleted_at IS NOT NULL AND u.status = 'banned'") == []


def test_the_fragments_are_the_predicates() -> None:
    assert is_live() == "deleted_at IS NULL"
    assert is_live("f") == "f.deleted_at IS NULL"
    assert is_active("u") == "u.status = 'active'"
