"""Parsing a GraphQL document with Roost's grammar within ``MAX_TOKENS``, cached per
query text: the HTTP and WebSocket guards (app/guard_rules.py) and the operation path
(app/operation.py) share it, so a new document is parsed once."""

from __future__ import annotations

import functools
import inspect

from graphql import DocumentNode, GraphQLSyntaxError, Source, parse

#: Documents whose limits and validation are kept (per process, least recently used
#: dropped first).
DOCUMENT_CACHE_SIZE = 512
#: Only documents up to this many characters are kept: an app's operations are far
#: smaller, and a parsed document costs about 70 bytes per character, so the caches
#: hold at most ~2 x 512 x 0.3 MB however large the documents an attacker sends
#: (one near MAX_TOKENS is ~17 kB of text and ~1.2 MB parsed).
CACHED_DOCUMENT_MAX_CHARS = 4096
#: A document may hold this many characters per token of MAX_TOKENS (64,000 at the
#: default): comments and ignored characters count toward no token, and graphql-core
#: lexes ~2 MB a second, so a megabyte-long comment was half a second of event loop.
#: The longest real documents are a few characters per token.
MAX_CHARS_PER_TOKEN = 16

#: graphql-core 3.3 parses empty selection sets (``{ viewer {} }``, graphql-spec#1227),
#: on which depth limiters crash (``max()`` of nothing) outside the error masking.
#: Roost keeps the grammar ``SelectionSet : { Selection+ }``: they are syntax errors.
STRICT_GRAMMAR = (
    {"allow_empty_selection_sets": False}
    if "allow_empty_selection_sets" in inspect.signature(parse).parameters
    else {}
)


def parse_document(query: str, max_tokens: int) -> DocumentNode:
    """``query`` parsed with Roost's grammar within ``max_tokens`` (GraphQLError if it
    does not parse), cached per text up to CACHED_DOCUMENT_MAX_CHARS: the HTTP guards
    and the schema share it, so a new document is parsed once. A document longer than
    ``MAX_CHARS_PER_TOKEN`` x ``max_tokens`` characters is refused unread."""
    if len(query) > CACHED_DOCUMENT_MAX_CHARS:
        if len(query) > MAX_CHARS_PER_TOKEN * max_tokens:
            raise GraphQLSyntaxError(
                Source(""),
                0,
                f"Document is longer than {MAX_CHARS_PER_TOKEN * max_tokens} characters"
                f" ({MAX_CHARS_PER_TOKEN} per token of MAX_TOKENS). Parsing aborted.",
            )
        return _parse(query, max_tokens)
    return _parse_cached(query, max_tokens)


def _parse(query: str, max_tokens: int) -> DocumentNode:
    return parse(query, max_tokens=max_tokens, **STRICT_GRAMMAR)


_parse_cached = functools.lru_cache(maxsize=DOCUMENT_CACHE_SIZE)(_parse)
