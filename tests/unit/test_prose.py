"""Docstrings and comments state contracts, not history: no tracker references
("issue 8 item 7") in the code or the tests."""

from __future__ import annotations

import re
from pathlib import Path

from app.settings import ROOT

PACKAGES = (
    "app",
    "domain",
    "adapters",
    "schema",
    "resolvers",
    "workers",
    "tools",
    "migrations",
    "bench",
)
TRACKER = re.compile(r"\bissues? (?:item |#)?\d+", re.I)


def test_no_issue_numbers_in_code() -> None:
    bad = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for pkg in (*PACKAGES, "tests")
        for path in sorted((ROOT / pkg).rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if TRACKER.search(line) and path != Path(__file__)
    ]
    assert not bad, "say what the code does, not which issue asked for it:\n" + "\n".join(bad)
