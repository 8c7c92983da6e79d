"""Document limits before validation (app/document_limits.py).

Validation of a document that repeats one field many times is quadratic in graphql-core
(the field-merging rule); documents past the limits are refused by one linear pass
before it, with ``GRAPHQL_VALIDATION_FAILED``, so no request holds the event loop for
long. The latency test runs a real API process and measures another client's latency
against a baseline taken in the same test (ratios, no absolute thresholds).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time

import httpx
import pytest

from tests.support.ws import start_api


def error_code(out: dict) -> str | None:
    return (out.get("errors") or [{}])[0].get("extensions", {}).get("code")


def repeated_feed(copies: int, variant: int = 0) -> str:
    """The issue's document: ``feed(first:1){edges{node{id}}}`` ``copies`` times under
    ``viewer`` (no aliases, depth 5, ~8 KB for 260 copies); ``variant`` changes one copy
    so no parser or validation cache has seen it."""
    same = " ".join("feed(first:1){edges{node{id}}}" for _ in range(copies - 1))
    return "{ viewer { " + same + f" feed(first:{variant + 2}){{edges{{node{{id}}}}}} }} }}"


def aliased_feeds(variant: int) -> str:
    """A normal document of the same kind: 30 aliased feeds (the alias limit)."""
    fields = " ".join(f"a{i}: feed(first:{variant + 1}){{edges{{node{{id}}}}}}" for i in range(30))
    return "{ viewer { " + fields + " } }"


# --- item 8: no crash, no error without a code -------------------------------------------


async def test_unknown_fragment_is_a_validation_error(gql):
    out = await gql("{ ...Nope }")
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "Unknown fragment 'Nope'" in out["errors"][0]["message"], out
    assert out.get("data") is None


async def test_deep_unknown_fragment_inside_a_field(gql):
    out = await gql('{ user(username: "x") { ...Nope } }')
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out


async def test_a_chain_of_400_fragments_runs_or_is_refused_with_a_code(gql):
    chain = "\n".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(400))
    out = await gql("query { ...F0 }\n" + chain + "\nfragment F400 on Query { __typename }")
    if "errors" in out:
        for err in out["errors"]:
            assert err["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED", out
            assert "recursion" not in err["message"], out
    else:
        assert out["data"] == {"__typename": "Query"}, out


async def test_a_chain_of_141_fragments_with_one_field_runs(gql):
    chain = "\n".join(f"fragment F{i} on Query {{ ...F{i + 1} }}" for i in range(141))
    out = await gql("query { ...F0 }\n" + chain + "\nfragment F141 on Query { __typename }")
    assert out == {"data": {"__typename": "Query"}}, out


async def test_an_unused_fragment_bomb_is_a_validation_error(gql):
    levels = 24  # 2^24 fields, were it expanded
    frags = "\n".join(
        f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)
    )
    out = await gql("{ __typename }\n" + frags + f"\nfragment F{levels} on Query {{ __typename }}")
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out


async def test_fragment_cycles_are_validation_errors(gql):
    out = await gql("{ ...A } fragment A on Query { ...B } fragment B on Query { ...A }")
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "recursion" not in json.dumps(out)


async def test_fragments_that_expand_exponentially_are_refused(gql):
    # F_i spreads F_{i+1} twice: 2^16 copies of __typename once expanded.
    levels = 16
    frags = "\n".join(
        f"fragment F{i} on Query {{ ...F{i + 1} ...F{i + 1} }}" for i in range(levels)
    )
    out = await gql("{ ...F0 }\n" + frags + f"\nfragment F{levels} on Query {{ __typename }}")
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    message = out["errors"][0]["message"]
    assert "expanded" in message or "field comparisons" in message, out


async def test_depth_and_aliases_still_count_through_fragments(gql, settings):
    deep = "{ viewer { ...A } } fragment A on User { " + "followers { edges { node { " * 4
    deep += "id" + " } } }" * 4 + " }"
    out = await gql(deep)
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "depth" in out["errors"][0]["message"], out
    aliases = "{ ...A ...A } fragment A on Query { " + " ".join(
        f"t{i}: __typename" for i in range(settings.max_aliases // 2 + 1)
    )
    out = await gql(aliases + " }")
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "aliases" in out["errors"][0]["message"], out


@pytest.mark.parametrize(
    "query",
    [
        repeated_feed(260),
        "{ " + " ".join('user(username:"a"){id}' for _ in range(250)) + " }",
        # Unused fragments are validated too: the same copies hidden in one.
        "{ __typename } fragment X on Query { viewer { "
        + " ".join("feed(first:1){edges{node{id}}}" for _ in range(260))
        + " } }",
    ],
    ids=["260-feeds", "250-users", "in-an-unused-fragment"],
)
async def test_repeated_fields_are_refused_before_validation(gql, query):
    out = await gql(query)
    assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    assert "field comparisons" in out["errors"][0]["message"], out
    assert out.get("data") is None


async def test_a_few_overlapping_fragments_are_fine(gql, make_users):
    (a,) = await make_users(1)
    frags = " ".join(f"...F{i}" for i in range(10))
    defs = " ".join(f"fragment F{i} on User {{ id username displayName }}" for i in range(10))
    out = await gql(f"{{ viewer {{ {frags} }} }} {defs}", token=a.token)
    assert "errors" not in out, out
    assert out["data"]["viewer"]["username"] == a.username


# --- item 7: one request cannot stall the others -----------------------------------------


@pytest.fixture(scope="module")
def api(settings):
    """One API process (limits off: the suite's requests all come from one address)."""
    proc = start_api(
        {
            "DATABASE_URL": settings.database_url,
            "REDIS_URL": settings.redis_url,
            "ARQ_QUEUE": settings.arq_queue,
            "JWT_SECRET": settings.jwt_secret,
            "RATE_LIMIT_ENABLED": "false",
            "WORKER_METRICS_PORT": "0",
            "DB_POOL_SIZE": "2",
            "DB_MAX_OVERFLOW": "2",
        }
    )
    yield proc
    proc.stop()


async def _phase(base: str, documents: list[str]) -> tuple[list[float], list[dict], list[float]]:
    """Client A sends ``documents`` one after another while client B sends ``{ __typename }``
    in a loop; return A's latencies, A's answers and B's latencies (seconds)."""
    done = asyncio.Event()
    other: list[float] = []

    async def client_b() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=120) as c:
            while not done.is_set() or len(other) < 20:
                t0 = time.perf_counter()
                resp = await c.post("/graphql", json={"query": "{ __typename }"})
                other.append(time.perf_counter() - t0)
                assert resp.json() == {"data": {"__typename": "Query"}}

    b = asyncio.create_task(client_b())
    latencies, answers = [], []
    try:
        async with httpx.AsyncClient(base_url=base, timeout=120) as c:
            await c.post("/graphql", json={"query": "{ __typename }"})  # connection up
            for doc in documents:
                t0 = time.perf_counter()
                resp = await c.post("/graphql", json={"query": doc})
                latencies.append(time.perf_counter() - t0)
                answers.append(resp.json())
    finally:
        done.set()
        await b
    return latencies, answers, other


def _p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


async def test_a_260_copy_document_is_refused_quickly_and_stalls_nobody(api):
    # Baseline: normal documents of the same kind (30 aliased feeds, each new).
    normal, normal_out, normal_other = await _phase(api.http, [aliased_feeds(i) for i in range(8)])
    assert all(o == {"data": {"viewer": None}} for o in normal_out), normal_out[0]
    # Attack: the 260-copy document, each one new (no cache helps).
    attack, attack_out, attack_other = await _phase(
        api.http, [repeated_feed(260, i) for i in range(8)]
    )
    for out in attack_out:
        assert error_code(out) == "GRAPHQL_VALIDATION_FAILED", out
    figures = {
        "refusal_median_ms": round(1000 * statistics.median(attack), 2),
        "refusal_max_ms": round(1000 * max(attack), 2),
        "normal_median_ms": round(1000 * statistics.median(normal), 2),
        "other_worst_ms": round(1000 * max(attack_other), 2),
        "other_p90_ms": round(1000 * _p90(attack_other), 2),
        "other_baseline_worst_ms": round(1000 * max(normal_other), 2),
        "other_baseline_p90_ms": round(1000 * _p90(normal_other), 2),
    }
    print("260-copy document:", figures)
    # Generous ratios against the same run's baseline (the old main: ~100-1000x).
    assert statistics.median(attack) <= 10 * statistics.median(normal), figures
    assert _p90(attack_other) <= 10 * _p90(normal_other), figures
