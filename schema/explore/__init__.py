"""Explore and trending hashtags (docs/api/explore.md "Explore")."""
