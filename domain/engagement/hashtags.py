"""Hashtag extraction (docs/design.md "Decided details", Hashtags): UAX #31 identifiers outside
URLs, NFKC + casefold; ≤ 30 per post, ≤ 50 code points."""

from __future__ import annotations

import datetime as dt
import unicodedata
import uuid

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from domain.db import new_id

MAX_TAGS = 30
MAX_TAG_LEN = 50


def _is_tag_char(ch: str) -> bool:
    return (
        ch == "_" or unicodedata.category(ch)[0] in ("L", "M") or unicodedata.category(ch) == "Nd"
    )


#: ZWNJ and ZWJ: part of a tag between two tag characters (UAX #31, hashtag identifiers).
JOINERS = frozenset("\u200c\u200d")


def _tag_end(text: str, start: int) -> int:
    """The end of the tag body at ``start`` (joiners only between tag characters)."""
    j, n = start, len(text)
    while j < n:
        if _is_tag_char(text[j]):
            j += 1
        elif text[j] in JOINERS and j > start and j + 1 < n and _is_tag_char(text[j + 1]):
            j += 1
        else:
            break
    return j


def fold_tag(tag: str) -> str:
    """Return the canonical form of a tag: NFKC, then casefold (``Café`` → ``café``)."""
    return unicodedata.normalize("NFKC", tag).casefold()


def tag_named(name: str) -> str | None:
    """The folded tag ``name`` is (``#`` optional), or None if not exactly one tag."""
    body = name.removeprefix("#")
    if not body or len(body) > MAX_TAG_LEN or _tag_end(body, 0) != len(body):
        return None
    return fold_tag(body)


def _in_url(text: str, hash_pos: int) -> bool:
    """Whether the ``#`` at ``hash_pos`` sits in a URL token."""
    start = hash_pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    token = text[start:hash_pos]
    return "://" in token or token.lower().startswith("www.")


def extract_hashtags(text: str) -> list[str]:
    """The distinct folded tags of ``text`` in order of first appearance."""
    tags: list[str] = []
    seen: set[str] = set()
    i, n = 0, len(text)
    while i < n and len(tags) < MAX_TAGS:
        if text[i] != "#":
            i += 1
            continue
        prev = text[i - 1] if i > 0 else " "
        j = _tag_end(text, i + 1)
        body = text[i + 1 : j]
        if (
            body
            and not _is_tag_char(prev)
            and prev not in "&#/"
            and not _in_url(text, i)
            and len(body) <= MAX_TAG_LEN
        ):
            tag = fold_tag(body)
            if tag not in seen:
                seen.add(tag)
                tags.append(tag)
        i = max(j, i + 1)
    return tags


async def tag_post(
    conn: AsyncConnection, post_id: uuid.UUID, created_at: dt.datetime, caption: str
) -> list[str]:
    """Record a new post's hashtags in the caller's transaction; return them."""
    names = extract_hashtags(caption)
    if not names:
        return []
    await conn.execute(
        text(
            "INSERT INTO hashtags (id, name)"
            " SELECT * FROM unnest(CAST(:ids AS uuid[]), CAST(:names AS text[]))"
            " ON CONFLICT (name) DO NOTHING"
        ),
        {"ids": [new_id() for _ in names], "names": names},
    )
    await conn.execute(
        text(
            "INSERT INTO post_hashtags (hashtag_id, post_id, created_at)"
            " SELECT id, :post, :at FROM hashtags WHERE name = ANY(CAST(:names AS text[]))"
            " ON CONFLICT DO NOTHING"
        ),
        {"post": post_id, "at": created_at, "names": names},
    )
    return names


async def retag_post(
    conn: AsyncConnection, post_id: uuid.UUID, created_at: dt.datetime, caption: str
) -> list[str]:
    """Make the post's hashtags those of ``caption`` in the caller's transaction; new links at the
    post's ``created_at``."""
    names = extract_hashtags(caption)
    await conn.execute(
        text(
            "DELETE FROM post_hashtags ph USING hashtags h"
            " WHERE ph.post_id = :post AND h.id = ph.hashtag_id"
            " AND NOT h.name = ANY(CAST(:names AS text[]))"
        ),
        {"post": post_id, "names": names},
    )
    return await tag_post(conn, post_id, created_at, caption)
