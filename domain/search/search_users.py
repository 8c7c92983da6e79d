"""Use case: find people by username or display name (docs/api/search.md "User search"), ranked by
match tier, then ``followers``, then id: one ``UNION ALL`` of a limited branch per tier, so a
filling prefix never computes a similarity."""

from __future__ import annotations

import re
import unicodedata
import uuid
from dataclasses import dataclass

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from domain.errors import ValidationError
from domain.search.ranking import Ranked, keyset_after, keyset_params

#: Longest query, in code points after NFC normalisation.
QUERY_MAX = 64
#: Shortest query that also matches typos (pg_trgm needs a few trigrams to mean much).
FUZZY_MIN = 3

EXACT_USERNAME, USERNAME_PREFIX, EXACT_NAME, NAME_WORDS, NAME_TYPOS = 40, 30, 25, 20, 15

_USERNAME_PREFIX_RE = re.compile(r"^[a-z0-9._]{1,30}$")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SearchQuery:
    """A cleaned query: ``text`` (NFC, collapsed) and ``username``, its lower-cased prefix (None if
    impossible)."""

    text: str
    username: str | None

    @property
    def fuzzy(self) -> bool:
        """Whether typos are matched too."""
        return len(self.text) >= FUZZY_MIN

    @property
    def username_range(self) -> tuple[str, str] | None:
        """``[lo, hi)``: the byte-order range of usernames starting with ``username``."""
        if self.username is None:
            return None
        u = self.username
        return u, u[:-1] + chr(ord(u[-1]) + 1)


def parse_query(raw: str) -> SearchQuery:
    """Clean a query or raise ValidationError (``query``): no control characters, 1-64 code points,
    not just ``@``."""
    if any(unicodedata.category(ch) == "Cc" and not ch.isspace() for ch in raw):
        raise ValidationError("query", "query must not contain control characters.")
    value = _SPACES.sub(" ", unicodedata.normalize("NFC", raw)).strip()
    if not value.removeprefix("@").strip():  # a leading @ is ignored: "@" alone is empty
        raise ValidationError("query", "query must not be empty.")
    if len(value) > QUERY_MAX:
        raise ValidationError(
            "query", f"query is {len(value)} characters; the limit is {QUERY_MAX}."
        )
    handle = value.removeprefix("@")
    handle = handle.lower() if handle.isascii() else handle
    username = handle if _USERNAME_PREFIX_RE.fullmatch(handle) else None
    return SearchQuery(value, username)


@dataclass(frozen=True, slots=True)
class Terms:
    """What PostgreSQL derives from the query, read first so the planner sees constants: ``folded``,
    ``fuzzy``, ``words``, ``corrected`` (None when the query has no word)."""

    folded: str
    fuzzy: str
    words: str | None
    corrected: str | None


_TERMS = text(
    """
    SELECT set_config('pg_trgm.similarity_threshold', :threshold, true),
           set_config('plan_cache_mode', 'force_custom_plan', true),
           set_config('jit', 'off', true),
           search_fold(:fuzzy) AS folded, search_fold(:fuzzy) AS fuzzy,
           search_prefix_query(:q)::text AS words, search_fuzzy_query(:q)::text AS corrected
    """
)

_HIDDEN = """
    WITH hidden AS (
        SELECT blocked_id AS id FROM blocks WHERE blocker_id = :viewer
        UNION ALL
        SELECT blocker_id FROM blocks WHERE blocked_id = :viewer)"""

_FUZZY_SCORE = "floor(10 * similarity(s.username, :fuzzy))::int"
_NAME_VECTOR = "to_tsvector('simple'::regconfig, s.name)"


def _branches(query: SearchQuery, terms: Terms) -> list[tuple[int | None, str]]:
    """``(score, condition)`` per applicable tier, best first (username typos: None)."""
    in_range = "(s.username >= :lo AND s.username < :hi)"
    words = f"{_NAME_VECTOR} @@ CAST(:words AS tsquery)"
    corrected = f"{_NAME_VECTOR} @@ CAST(:corrected AS tsquery)"
    out: list[tuple[int | None, str]] = []
    better = []
    if query.username is not None:
        out.append((EXACT_USERNAME, "s.username = :u"))
        out.append((USERNAME_PREFIX, f"{in_range} AND s.username <> :u"))
        better.append(f"NOT {in_range}")
    if terms.folded:
        out.append((EXACT_NAME, " AND ".join(["s.name = :folded", *better])))
        better.append("s.name <> :folded")
    if terms.words is not None:
        out.append((NAME_WORDS, " AND ".join([words, *better])))
        better.append(f"NOT ({words})")
    if query.fuzzy and terms.corrected is not None:
        out.append((NAME_TYPOS, " AND ".join([corrected, *better])))
        better.append(f"NOT ({corrected})")
    if query.fuzzy and terms.fuzzy:
        out.append((None, " AND ".join(["s.username % :fuzzy", *better])))
    return out


def search_statement(
    query: SearchQuery, terms: Terms, *, viewer: bool, after: Ranked | None
) -> str:
    """The SQL of :func:`search_users` for this query; empty when nothing can match."""
    parts = []
    for score, condition in _branches(query, terms):
        score_sql = str(score) if score is not None else _FUZZY_SCORE
        if after is not None and score is not None and score > after.score:
            continue  # the whole tier came before the cursor
        where = [condition]
        if viewer:
            where.append("s.user_id NOT IN (SELECT id FROM hidden)")
        if after is not None and (score is None or score == after.score):
            where.append(keyset_after(score_sql, after))
        parts.append(
            f"(SELECT s.user_id, {score_sql} AS score, s.followers FROM user_search s"
            f" WHERE {' AND '.join(where)}"
            f" ORDER BY score DESC, s.followers DESC, s.user_id LIMIT :limit)"
        )
    if not parts:
        return ""
    union = "\nUNION ALL\n".join(parts)
    head = _HIDDEN if viewer else ""
    return f"{head} SELECT user_id, score, followers FROM ({union}) ranked LIMIT :limit"


async def search_users(
    engine: AsyncEngine,
    query: SearchQuery,
    *,
    viewer_id: uuid.UUID | None,
    limit: int,
    after: Ranked | None = None,
    fuzzy_threshold: float = 0.45,
) -> list[Ranked]:
    """Up to ``limit`` matches in rank order after ``after``; two statements in one read
    transaction, the first setting the threshold and :class:`Terms`."""
    if limit <= 0:
        return []
    fuzzy = query.text.removeprefix("@")
    async with engine.begin() as conn:
        row = (
            await conn.execute(
                _TERMS, {"threshold": str(fuzzy_threshold), "q": query.text, "fuzzy": fuzzy}
            )
        ).one()
        terms = Terms(row.folded, row.fuzzy, row.words, row.corrected)
        sql = search_statement(query, terms, viewer=viewer_id is not None, after=after)
        if not sql:
            return []
        params: dict[str, object] = {
            "folded": terms.folded,
            "fuzzy": terms.fuzzy,
            "words": terms.words,
            "corrected": terms.corrected,
            "limit": limit,
        }
        if query.username is not None:
            params["u"] = query.username
            params["lo"], params["hi"] = query.username_range or ("", "")
        if viewer_id is not None:
            params["viewer"] = viewer_id
        if after is not None:
            params.update(keyset_params(after))
        rows = (await conn.execute(text(sql), params)).all()
    return [Ranked(r.user_id, r.score, r.followers) for r in rows]
