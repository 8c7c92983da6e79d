"""Every relative link in README.md and docs/ resolves: the file exists, and an anchor
(``#section``) is a heading of the target, slugged as GitHub does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.settings import ROOT

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` dropped, spaces
    to ``-``."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def broken_links(path: Path) -> list[str]:
    bad = []
    for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):
            continue  # http:, https:, mailto:
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            bad.append(f"{target}: no heading #{anchor}")
    return bad


@pytest.mark.parametrize("path", documents(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(path: Path) -> None:
    assert not broken_links(path), f"{path.relative_to(ROOT)}: {broken_links(path)}"


def test_a_broken_link_or_anchor_is_reported(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Real heading\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](b.md#real-heading) [self](#top) [gone](c.md) [anchor](b.md#nope)\n\n"
        "```\n[not a link](nowhere.md)\n```\n# Top\n"
    )
    assert broken_links(doc) == ["c.md: no such file", "b.md#nope: no heading #nope"]
