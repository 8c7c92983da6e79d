"""Explore: the discovery feed, its video variant and trending hashtags (README "Explore")."""
