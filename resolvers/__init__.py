"""Root Query, Mutation and Subscription fields: decode, call the domain, encode."""

from resolvers.mutation import Mutation
from resolvers.query import Query
from resolvers.subscription import Subscription

__all__ = ["Mutation", "Query", "Subscription"]
