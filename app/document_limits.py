"""Document limits checked before graphql-core's validation, in one linear pass
(docs/api/limits.md "HTTP guards", Document limits).

graphql-core's field-merging rule is quadratic per response path, and Strawberry's
limiters recurse without memory. :func:`check_document` walks iteratively, each fragment
spread once per chain, and stops at the first limit passed: ``max_depth``
(introspection aside), ``max_aliases``, ``max_field_merges``, ``max_expanded_fields``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    OperationDefinitionNode,
    SelectionSetNode,
)

#: Results kept per query text (the same documents come again and again).
CACHE_SIZE = 512


@dataclass(frozen=True)
class DocumentLimits:
    """The limits of one document."""

    max_depth: int = 12
    max_aliases: int = 30
    max_field_merges: int = 2_000
    max_expanded_fields: int = 10_000


def _refusal(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"code": "GRAPHQL_VALIDATION_FAILED"})


def _too_large(limits: DocumentLimits) -> GraphQLError:
    return _refusal(
        f"The document has more than {limits.max_expanded_fields} fields and fragment "
        "spreads once its fragments are expanded."
    )


def check_document(document: DocumentNode, limits: DocumentLimits) -> GraphQLError | None:
    """The first limit ``document`` passes, as a ``GRAPHQL_VALIDATION_FAILED`` error, or
    None; visits at most ``limits.max_expanded_fields`` fields."""
    fragments = {
        d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)
    }
    # Response paths: (parent path id, response name) -> [path id, fields seen there].
    paths: dict[tuple[int, str], list[int]] = {}
    merges = aliases = expanded = 0
    # Work items: selection set, path id, field depth (-1: not counted), chain of
    # fragments being expanded, and whether aliases count (operations only).
    stack: list[tuple[SelectionSetNode, int, int, frozenset[str], bool]] = []
    for root_id, definition in enumerate(document.definitions):
        if isinstance(definition, OperationDefinitionNode):
            stack.append((definition.selection_set, -1 - root_id, 0, frozenset(), True))
    # Fragments no operation reaches are walked afterwards, each once (linear in the text).
    walked: set[str] = set()
    unreached = [
        (root_id, d)
        for root_id, d in enumerate(document.definitions)
        if isinstance(d, FragmentDefinitionNode)
    ]
    while True:
        if not stack:
            while unreached and unreached[-1][1].name.value in walked:
                unreached.pop()
            if not unreached:
                break
            root_id, definition = unreached.pop()
            walked.add(definition.name.value)
            chain = frozenset((definition.name.value,))
            stack.append((definition.selection_set, -1 - root_id, 0, chain, False))
        selection_set, path, depth, chain, in_operation = stack.pop()
        for sel in selection_set.selections:
            if isinstance(sel, FieldNode):
                expanded += 1
                if expanded > limits.max_expanded_fields:
                    return _too_large(limits)
                name = sel.name.value
                if sel.alias is not None and in_operation:
                    aliases += 1
                    if aliases > limits.max_aliases:
                        return _refusal(
                            f"More than {limits.max_aliases} aliases found. "
                            f"Allowed: {limits.max_aliases}"
                        )
                if depth > limits.max_depth:
                    return _refusal(
                        f"The operation exceeds the maximum depth of {limits.max_depth}."
                    )
                key = (path, sel.alias.value if sel.alias is not None else name)
                seen = paths.get(key)
                if seen is None:
                    seen = paths[key] = [len(paths), 0]
                merges += seen[1]
                seen[1] += 1
                if merges > limits.max_field_merges:
                    return _refusal(
                        f"Too many fields share the response name '{key[1]}': the document "
                        f"needs more than {limits.max_field_merges} field comparisons. "
                        "Select each field once per place (alias the ones that differ)."
                    )
                if sel.selection_set is not None:
                    child_depth = -1 if depth < 0 or name.startswith("__") else depth + 1
                    stack.append((sel.selection_set, seen[0], child_depth, chain, in_operation))
            elif isinstance(sel, InlineFragmentNode):
                stack.append((sel.selection_set, path, depth, chain, in_operation))
            elif isinstance(sel, FragmentSpreadNode):
                name = sel.name.value
                fragment = fragments.get(name)
                if fragment is None or name in chain:
                    continue
                if in_operation or name not in walked:
                    walked.add(name)
                    expanded += 1  # a chain of spreads costs work without fields
                    if expanded > limits.max_expanded_fields:
                        return _too_large(limits)
                    stack.append(
                        (fragment.selection_set, path, depth, chain | {name}, in_operation)
                    )
    return None


def variables_within(variables: Any, limit: int) -> bool:
    """Whether a request's decoded ``variables`` hold at most ``limit`` values (every
    scalar, list and object), counting no further."""
    stack = [variables]
    count = 0
    while stack:
        value = stack.pop()
        count += 1
        if count > limit:
            return False
        if isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return True


class DocumentLimiter:
    """:func:`check_document` with its answers kept per query text (an LRU)."""

    def __init__(self, limits: DocumentLimits, cache_size: int = CACHE_SIZE) -> None:
        self.limits = limits
        self.cache_size = cache_size
        self._cache: OrderedDict[str, GraphQLError | None] = OrderedDict()

    def check(self, query: str | None, document: DocumentNode) -> GraphQLError | None:
        """The refusal of ``document`` (parsed from ``query``), or None."""
        if query is None:
            return check_document(document, self.limits)
        try:
            error = self._cache[query]
        except KeyError:
            error = self._cache[query] = check_document(document, self.limits)
            if len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(query)
        return error
