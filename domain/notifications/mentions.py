"""``@username`` mentions in captions and comments: ``@`` and a username (docs/design.md
"Decided details"), not after a letter, digit or one of ``_ . @ / : + - =``, not inside
a URL, not followed by ``@``. A trailing dot is punctuation unless the name with it
exists (:func:`extract_mentions` returns both).
"""

from __future__ import annotations

import re

from domain.text import USERNAME_RE

_MENTION = re.compile(r"@([A-Za-z0-9._]+)")
_NOT_BEFORE = set("_.@/:+-=")


def _in_url(text: str, at: int) -> bool:
    """True if position ``at`` sits in a whitespace-delimited token that is a URL."""
    start = at
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    token = text[start:at].lower()
    return "://" in token or token.startswith("www.")


def extract_mentions(text: str, *, limit: int = 20) -> list[tuple[str, ...]]:
    """The mentions of ``text`` in order of first appearance, at most ``limit``, each a
    tuple of candidate usernames, longest first (``("alice.", "alice")`` for
    ``@alice.``)."""
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
