"""``@username`` mentions (docs/design.md "Decided details"): not after a letter, digit or ``_ . @ /
: + - =``, not in a URL, not followed by ``@``."""

from __future__ import annotations

import re

from domain.text import USERNAME_RE

_MENTION = re.compile(r"@([A-Za-z0-9._]+)")
_NOT_BEFORE = set("_.@/:+-=")


def _in_url(text: str, at: int) -> bool:
    """Whether position ``at`` sits in a URL token."""
    start = at
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    token = text[start:at].lower()
    return "://" in token or token.startswith("www.")


def extract_mentions(text: str, *, limit: int = 20) -> list[tuple[str, ...]]:
    """Mentions of ``text`` in order, at most ``limit``, each a tuple of candidates longest first
    (``("alice.", "alice")``)."""
    out: list[tuple[str, ...]] = []
    seen: set[str] = set()
    for m in _MENTION.finditer(text):
        if len(out) >= limit:
            break
        start, end = m.span()
        prev = text[start - 1] if start > 0 else " "
        if prev.isalnum() or prev in _NOT_BEFORE or _in_url(text, start):
            continue
        if end < len(text) and text[end] == "@":
            continue
        raw = m.group(1).lower()
        candidates = tuple(
            dict.fromkeys(c for c in (raw, raw.rstrip(".")) if USERNAME_RE.fullmatch(c))
        )
        if not candidates or candidates[-1] in seen:
            continue
        seen.update(candidates)
        out.append(candidates)
    return out
