"""Bulk tools over the domain: the real follow graph's loader, the post seeder and the
celebrity generator (``roost load-graph``, ``roost seed-posts``, ``roost load-celebrities``).

They write thousands of rows per statement (COPY, staged tables) where the use cases in
``domain/`` write one change per transaction; they import ``domain`` and nothing of
GraphQL, HTTP, arq or the wiring (import-linter holds it)."""
