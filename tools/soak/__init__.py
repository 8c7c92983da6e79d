"""A bounded soak of the whole system (``make soak``): virtual users sign up, follow,
post, delete, like, comment, block, page their feeds and hold subscriptions against
``roost serve --workers 2`` and ``roost worker`` on an embedded PostgreSQL and Redis of
a scratch folder, while a schedule SIGKILLs the worker and one API process, stops
PostgreSQL ``-m immediate`` and flushes Redis; then an audit (README "Soak")."""
