"""Roost's business: tables, use cases, counters and typed errors.

Knows nothing of GraphQL, HTTP or arq, and imports none of Roost's other packages.
"""
