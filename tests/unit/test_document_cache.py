"""The per-process document caches keep only documents of an app's size, so the
largest documents the limits allow cannot fill memory (app/operation.py)."""

from __future__ import annotations

from graphql import build_schema

from app.document_limits import DocumentLimiter, DocumentLimits
from app.operation import Documents
from app.parsing import CACHED_DOCUMENT_MAX_CHARS, _parse_cached, parse_document

SCHEMA = build_schema("type Query { a: Int }")


def _big(chars: int) -> str:
    """A valid document of at least ``chars`` characters (whitespace is free)."""
    return "{ a" + " " * chars + "}"


def test_a_small_document_is_parsed_once():
    query = "{ a }  # test_a_small_document_is_parsed_once"
    first = parse_document(query, 4000)
    assert parse_document(query, 4000) is first


def test_a_document_over_the_bound_is_not_kept():
    query = _big(CACHED_DOCUMENT_MAX_CHARS + 1)
    before = _parse_cached.cache_info().currsize
    first = parse_document(query, 4000)
    assert parse_document(query, 4000) is not first
    assert _parse_cached.cache_info().currsize == before

    documents = Documents(SCHEMA, DocumentLimiter(DocumentLimits()), 4000)
    assert documents.check(query).errors == ()
    assert documents.check("{ a }").errors == ()
    assert list(documents._cache) == ["{ a }"]
