"""graphql-core's messages in GraphQL's words: a value they echo reads as JSON (``null``,
``true``, ``"x"``, ``{"a": null}``), not as Python (``None``, ``True``, ``'x'``)."""

from __future__ import annotations

import importlib
import json
from typing import Any

_inspect: Any = importlib.import_module("graphql.pyutils.inspect")
_python_words = _inspect.inspect_recursive
_JSON_TYPES = (type(None), bool, int, float, str, list, dict)


def _json_words(value: Any, seen_values: list[Any]) -> str:
    """graphql-core's ``inspect`` of a JSON value as JSON (truncated as graphql-core
    truncates); anything else as graphql-core writes it."""
    if type(value) in _JSON_TYPES:
        try:
            text = json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):  # a value inside is not JSON
            return str(_python_words(value, seen_values))
        return str(_inspect.trunc_str(text))
    return str(_python_words(value, seen_values))


def install() -> None:
    """Make graphql-core echo values as JSON (idempotent)."""
    _inspect.inspect_recursive = _json_words


def in_graphql_words(message: str) -> str:
    """``message`` with graphql-core's fixed Python words for null in GraphQL's."""
    return message.replace(" not to be None.", " not to be null.")
