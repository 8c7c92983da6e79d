"""The payloads of WebSocket results (app/ws_incremental.py): incremental parts as HTTP
sends them, and a code on every error they carry, nested ones included."""

from __future__ import annotations

from graphql import GraphQLError, InitialIncrementalExecutionResult
from graphql import SubsequentIncrementalExecutionResult as Later
from graphql.execution import CompletedResult, IncrementalDeferResult, PendingResult
from strawberry.types import ExecutionResult

from app.guard_rules import payload_errors
from app.ws_guards import _with_codes
from app.ws_incremental import ResultPayloads


def test_a_later_part_names_the_path_and_label_of_what_was_pending() -> None:
    payloads = ResultPayloads()
    first = payloads.payload(
        InitialIncrementalExecutionResult(
            data={"user": {"username": "a"}},
            pending=[PendingResult(id="0", path=["user"], label="counts")],
            has_next=True,
            extensions={},
        )
    )
    assert first == {
        "data": {"user": {"username": "a"}},
        "pending": [{"id": "0", "path": ["user"], "label": "counts"}],
        "hasNext": True,
    }
    later = payloads.payload(
        Later(
            incremental=[IncrementalDeferResult(data={"followerCount": 1}, id="0")],
            completed=[CompletedResult(id="0")],
            has_next=False,
        )
    )
    assert later == {
        "hasNext": False,
        "incremental": [
            {"data": {"followerCount": 1}, "id": "0", "path": ["user"], "label": "counts"}
        ],
        "completed": [{"id": "0"}],
    }


def test_a_plain_result_is_data_and_errors() -> None:
    result = ExecutionResult(data={"a": 1}, errors=[GraphQLError("x", extensions={"code": "C"})])
    assert ResultPayloads().payload(result) == {
        "data": {"a": 1},
        "errors": [{"message": "x", "extensions": {"code": "C"}}],
    }


def test_every_error_of_a_later_part_gets_a_code() -> None:
    coded = {"message": "no", "extensions": {"code": "FORBIDDEN"}}
    part = {
        "hasNext": False,
        "incremental": [{"data": None, "id": "0", "errors": [{"message": "secret detail"}]}],
        "completed": [{"id": "1", "errors": [dict(coded)]}],
    }
    assert len(payload_errors(part)) == 2
    _with_codes(part)
    assert part["incremental"][0]["errors"] == [
        {"message": "Internal server error.", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}
    ]
    assert part["completed"][0]["errors"] == [coded]
