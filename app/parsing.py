"""Parsing a GraphQL document with Roost's grammar within ``MAX_TOKENS``, cached per
query text: the HTTP and WebSocket guards (app/guard_rules.py) and the operation path
(app/operation.py) share it, so a new document is parsed once."""

from __future__ import annotations

import functools
import inspect

from graphql import DocumentNode, GraphQLSyntaxError, Source, parse

#: Documents whose limits and validation are kept per process (an LRU).
DOCUMENT_CACHE_SIZE = 512
#: Only documents up to this many characters are cached (a parsed one costs ~70 bytes
#: per character), bounding the caches whatever a client sends.
CACHED_DOCUMENT_MAX_CHARS = 4096
#: Characters a document may hold per token of MAX_TOKENS: comments count toward no
#: token, and lexing a megabyte costs half a second of event loop.
MAX_CHARS_PER_TOKEN = 16

#: Roost keeps ``SelectionSet : { Selection+ }``: graphql-core 3.3's empty selection sets
#: (graphql-spec#1227) crash depth limiters outside the error masking.
STRICT_GRAMMAR = (
    {"allow_empty_selection_sets": False}
    if "allow_empty_selection_sets" in inspect.signature(parse).parameters
    else {}
)


def parse_document(query: str, max_tokens: int) -> DocumentNode:
    """``query`` parsed with Roost's grammar within ``max_tokens`` (GraphQLError if not),
    cached per text up to CACHED_DOCUMENT_MAX_CHARS; one longer than
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
