"""Roost's business: tables, use cases, counters and typed errors; imports none of Roost's other
packages."""
