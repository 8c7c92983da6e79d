"""Root Query, Mutation (and later Subscription) fields: decode, call the domain, encode."""

from resolvers.mutation import Mutation
from resolvers.query import Query

__all__ = ["Mutation", "Query"]
