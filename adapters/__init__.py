"""Infrastructure behind the ports that ``domain/`` declares (Cosmic Python's
``adapters``): object storage, media decoding, Redis and PostgreSQL drivers. Only the
composition root (``app/container.py``) builds them; ``domain``, ``schema`` and
``resolvers`` never import this package."""
