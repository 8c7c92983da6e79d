"""Benchmarks that run Roost's real use cases against a real PostgreSQL (see README.md)."""
