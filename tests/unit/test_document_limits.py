"""The document limits' linear pass (app/document_limits.py), on small limits."""

from __future__ import annotations

from graphql import parse

from app.document_limits import DocumentLimiter, DocumentLimits, check_document

SMALL = DocumentLimits(max_depth=3, max_aliases=2, max_field_merges=3, max_expanded_fields=20)


def refusal(doc: str, limits: DocumentLimits = SMALL) -> str | None:
    error = check_document(parse(doc), limits)
    if error is None:
        return None
    assert error.extensions == {"code": "GRAPHQL_VALIDATION_FAILED"}
    return error.message


def test_field_merges_count_pairs_on_one_response_path():
    assert refusal("{ a a a }") is None  # 3 pairs
    assert "field comparisons" in refusal("{ a a a a }")  # 6 pairs
    assert refusal("{ x: a y: a a }") is None  # aliases make other paths
    # Copies under copies: 2 x 2 b's on the path a.b = 6 pairs, plus 1 for a.
    assert "'b'" in refusal("{ a { b b } a { b b } }")


def test_fragments_are_expanded_and_cycles_end():
    assert "field comparisons" in refusal("{ ...F ...F ...F } fragment F on Q { a b }")
    assert refusal("{ ...A } fragment A on Q { ...B } fragment B on Q { ...A x }") is None
    assert refusal("{ ...Unknown x }") is None  # left to the spec's rules


def test_expanded_size_is_bounded():
    fields = " ".join(f"f{i}" for i in range(6))
    doc = "{ ...A } fragment A on Q { ...B ...C } fragment B on Q { p { ...D } }"
    doc += f" fragment C on Q {{ q {{ ...D }} r {{ ...D }} }} fragment D on Q {{ {fields} }}"
    assert "expanded" in refusal(doc)


def test_depth_skips_introspection_and_aliases_count_in_operations_only():
    assert "depth" in refusal("{ a { b { c { d { e } } } } }")
    assert refusal("{ a { b { c { d } } } }") is None
    assert refusal("{ __schema { types { fields { type { ofType { name } } } } } }") is None
    assert "aliases" in refusal("{ x: a y: b z: c }")
    # An unused fragment's aliases are not the operation's.
    assert refusal("{ a } fragment F on Q { x: a y: b z: c }") is None


def test_a_chain_of_fragments_needs_no_recursion_and_is_bounded():
    def definitions(n: int) -> list[str]:
        return [f"fragment F{i} on Q {{ ...F{i + 1} }}" for i in range(n)] + [
            f"fragment F{n} on Q {{ a }}"
        ]

    def chain(n: int) -> str:
        return "{ ...F0 } " + " ".join(definitions(n))

    # Linear: a chain of 141 costs 141 spreads and a field, whichever order the
    # definitions come in, used by the operation or not.
    limits = DocumentLimits(max_expanded_fields=143)
    assert refusal(chain(141), limits) is None
    assert refusal(chain(142), limits) is not None
    unused = chain(141).replace("{ ...F0 }", "{ a }")
    assert refusal(unused, DocumentLimits(max_expanded_fields=143)) is None
    backwards = "{ a } " + " ".join(reversed(definitions(141)))
    assert refusal(backwards, DocumentLimits(max_expanded_fields=143)) is None
    message = refusal(chain(10_001), DocumentLimits(max_expanded_fields=10_000))
    assert "expanded" in message


def test_a_fragment_bomb_is_still_refused():
    # F_i spreads F_{i+1} twice: 2^20 fields once expanded; the message is about the
    # operation, which really expands so.
    levels = 20
    frags = " ".join(f"fragment F{i} on Q {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels))
    doc = "{ ...F0 } " + frags + f" fragment F{levels} on Q {{ a }}"
    assert "expanded" in refusal(doc, DocumentLimits(max_field_merges=10**9))
    # unused, it is walked once per fragment: its validation is linear too
    assert refusal(doc.replace("{ ...F0 }", "{ a }")) is None


def test_the_limiter_caches_per_query_text():
    limiter = DocumentLimiter(SMALL, cache_size=2)
    doc = "{ a a a a }"
    first = limiter.check(doc, parse(doc))
    assert first is not None and limiter.check(doc, parse("{ a }")) is first
    for other in ("{ b }", "{ c }"):
        limiter.check(other, parse(other))
    assert limiter.check(doc, parse("{ a }")) is None  # evicted: checked afresh
