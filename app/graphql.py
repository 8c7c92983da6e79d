"""The Strawberry schema: root types, scalar overrides, limits and error masking."""

from __future__ import annotations

import logging

import strawberry
from graphql import GraphQLError
from strawberry.extensions import (
    MaskErrors,
    MaxAliasesLimiter,
    MaxTokensLimiter,
    ParserCache,
    QueryDepthLimiter,
    ValidationCache,
)
from strawberry.schema.config import StrawberryConfig

from app.settings import Settings
from resolvers import Mutation, Query
from schema.scalars import SCALAR_MAP

log = logging.getLogger("roost.graphql")


def _should_mask(error: GraphQLError) -> bool:
    """Mask unexpected exceptions; keep errors that carry a code, and parse/validation errors."""
    if error.extensions and "code" in error.extensions:
        return False
    return error.original_error is not None


class RoostMaskErrors(MaskErrors):
    """MaskErrors that keeps ``extensions.code`` on every error: INTERNAL_SERVER_ERROR for
    masked ones, GRAPHQL_VALIDATION_FAILED / GRAPHQL_PARSE_FAILED for document errors."""

    def anonymise_error(self, error: GraphQLError) -> GraphQLError:
        log.error("internal error at %s", error.path, exc_info=error.original_error)
        return GraphQLError(
            message=self.error_message,
            nodes=error.nodes,
            source=error.source,
            positions=error.positions,
            path=error.path,
            extensions={"code": "INTERNAL_SERVER_ERROR"},
        )

    def _process_errors(self, errors: list[GraphQLError]) -> list[GraphQLError]:
        out = []
        for error in super()._process_errors(errors):
            if not (error.extensions and "code" in error.extensions):
                code = (
                    "GRAPHQL_PARSE_FAILED"
                    if error.message.startswith("Syntax Error")
                    else "GRAPHQL_VALIDATION_FAILED"
                )
                error.extensions = {**(error.extensions or {}), "code": code}
            out.append(error)
        return out


def build_schema(settings: Settings) -> strawberry.Schema:
    """Return the executable schema with Roost's limits (depth, aliases, tokens), parser
    and validation caches, and masking of internal errors."""
    return strawberry.Schema(
        query=Query,
        mutation=Mutation,
        config=StrawberryConfig(scalar_map=SCALAR_MAP),
        # Factories: each request gets fresh extension instances.
        extensions=[
            lambda: ParserCache(maxsize=512),
            lambda: ValidationCache(maxsize=512),
            lambda: QueryDepthLimiter(max_depth=settings.max_query_depth),
            lambda: MaxAliasesLimiter(max_alias_count=settings.max_aliases),
            lambda: MaxTokensLimiter(max_token_count=settings.max_tokens),
            lambda: RoostMaskErrors(
                should_mask_error=_should_mask, error_message="Internal server error."
            ),
        ],
    )
