"""Explore and trending hashtags (README "Explore")."""
