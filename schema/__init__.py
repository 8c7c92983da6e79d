"""The GraphQL contract: Strawberry types, inputs, unions, connections, the context and
the per-request dataloaders. Imports ``domain``, never ``resolvers`` or ``app``."""
