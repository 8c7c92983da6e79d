"""schema/context.py: what a request's context answers when a service is not configured."""

from __future__ import annotations

import pytest
from graphql import GraphQLError
from sqlalchemy.ext.asyncio import create_async_engine

from adapters.jwt_codec import JwtCodec
from domain.identity.tokens import TokenConfig
from schema.context import Context, Limits

TOKENS = TokenConfig(codec=JwtCodec(), secret="unit-test-secret-" + "x" * 32)


def context() -> Context:
    # The engine never connects here.
    engine = create_async_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    return Context(engine=engine, tokens=TOKENS, limits=Limits(), stores=None)


def test_feed_stores_without_redis_is_a_typed_service_unavailable_error() -> None:
    with pytest.raises(GraphQLError) as caught:
        context().feed_stores()
    assert caught.value.extensions == {"code": "SERVICE_UNAVAILABLE"}
    assert "REDIS_URL" in caught.value.message
