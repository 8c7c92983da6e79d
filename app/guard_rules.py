"""What the guards of both transports decide on, so a rule holds on every path: the
operation a document runs, the root fields charged to the sign-in budget, and the shapes
of a refusal's error (docs/api/limits.md "HTTP guards")."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, field
from typing import Any, Literal

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

from app.parsing import parse_document
from app.ratelimit import Decision

log = logging.getLogger("roost.http")

#: The answer to variables holding more values than a document may have tokens.
VARIABLES_TOO_LARGE = "The variables hold more than {} values (MAX_TOKENS)."
#: Root mutation fields that check a password or an e-mail code, or ask for a reset mail,
#: without a token: charged to the per-IP sign-in budget (RATE_LIMIT_AUTH).
AUTH_FIELDS = frozenset(
    {
        "logIn",
        "signUp",
        "cancelAccountDeletion",
        "verifyEmail",
        "requestPasswordReset",
        "resetPassword",
    }
)
#: Root mutation fields that check the signed-in user's password: charged to the same
#: budget, so a stolen access token cannot guess the password faster than a sign-in.
PASSWORD_FIELDS = frozenset({"changePassword", "deleteAccount", "changeEmail"})
#: Root mutation fields that need no viewer (a bad bearer token is ignored for them).
NO_VIEWER_FIELDS = AUTH_FIELDS | {"refreshSession", "__typename"}
#: Cached document summaries (the same documents come again and again).
OPERATION_CACHE_SIZE = 512


@dataclass(frozen=True)
class OperationInfo:
    """What the guards need of a document: the operation's kind and the names of its root
    fields (through fragments; one entry per occurrence, aliases included)."""

    kind: Literal["query", "mutation", "subscription"]
    root_fields: tuple[str, ...] = field(default=())

    @property
    def mutation_count(self) -> int:
        """Root mutation fields that run (``__typename`` does not), at least 1."""
        return max(1, sum(1 for f in self.root_fields if f != "__typename"))

    @property
    def needs_no_viewer(self) -> bool:
        """Whether every root field is in NO_VIEWER_FIELDS (a stale bearer is ignored)."""
        return self.kind == "mutation" and all(f in NO_VIEWER_FIELDS for f in self.root_fields)

    @property
    def auth_count(self) -> int:
        """Root fields charged to the sign-in budget (AUTH_FIELDS, PASSWORD_FIELDS)."""
        return sum(1 for f in self.root_fields if f in AUTH_FIELDS or f in PASSWORD_FIELDS)


def _root_fields(
    selection_set: SelectionSetNode, fragments: dict[str, FragmentDefinitionNode]
) -> list[str]:
    names: list[str] = []
    seen: set[str] = set()
    stack = [selection_set]
    while stack:
        for sel in stack.pop().selections:
            if isinstance(sel, FieldNode):
                names.append(sel.name.value)
            elif isinstance(sel, InlineFragmentNode):
                stack.append(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode):
                name = sel.name.value
                if name not in seen and name in fragments:
                    seen.add(name)
                    stack.append(fragments[name].selection_set)
    return names


@functools.lru_cache(maxsize=OPERATION_CACHE_SIZE)
def operation_info(
    query: str, operation_name: str | None, max_tokens: int
) -> OperationInfo | str | None:
    """The :class:`OperationInfo` of the operation ``query`` runs; the ``BAD_REQUEST``
    message when it names no runnable one; None when the document does not parse within
    ``max_tokens`` (or has no operation: Strawberry reports those)."""
    try:
        doc: DocumentNode = parse_document(query, max_tokens)
    except GraphQLError:
        return None
    ops = [d for d in doc.definitions if isinstance(d, OperationDefinitionNode)]
    if operation_name is None:
        if len(ops) != 1:
            return (
                "The document has several operations: name one with operationName."
                if ops
                else None  # no operation at all: a validation error of Strawberry's
            )
        op = ops[0]
    else:
        matches = [o for o in ops if o.name is not None and o.name.value == operation_name]
        if not matches:
            return f"Unknown operation named {operation_name!r}."
        op = matches[0]
    fragments = {d.name.value: d for d in doc.definitions if isinstance(d, FragmentDefinitionNode)}
    return OperationInfo(op.operation.value, tuple(_root_fields(op.selection_set, fragments)))


def ensure_code(error: dict[str, Any]) -> dict[str, Any]:
    """``error`` (formatted), changed in place: without an ``extensions.code`` it is a
    fault, logged and masked as ``INTERNAL_SERVER_ERROR``."""
    extensions = error.get("extensions")
    if not (isinstance(extensions, dict) and "code" in extensions):
        log.error("error without a code masked: %s", error.get("message"))
        error["message"] = "Internal server error."
        error["extensions"] = {**(extensions or {}), "code": "INTERNAL_SERVER_ERROR"}
    return error


def payload_errors(payload: Any) -> list[Any]:
    """Every error a result payload carries: its own, and those of its later parts'
    ``incremental`` and ``completed`` entries."""
    if not isinstance(payload, dict):
        return []
    errors = list(payload.get("errors") or ())
    for key in ("incremental", "completed"):
        for entry in payload.get(key) or ():
            if isinstance(entry, dict):
                errors += entry.get("errors") or ()
    return errors


def rate_limited_message(decision: Decision) -> str:
    return f"Too many requests: retry in {decision.retry_after_header} s."


def rate_limited_extensions(decision: Decision) -> dict[str, Any]:
    """``retryAfter`` (seconds) and ``budget`` of a ``RATE_LIMITED`` refusal."""
    return {"retryAfter": round(decision.retry_after_s, 3), "budget": decision.budget}
