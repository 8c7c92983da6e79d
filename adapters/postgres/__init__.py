"""PostgreSQL below SQLAlchemy: the one-round-trip read (:mod:`adapters.postgres.fetch`,
domain's :class:`domain.reads.RoundTrip`) and the asyncpg connection under a
transaction, for bulk ``COPY`` (:mod:`adapters.postgres.driver`)."""
