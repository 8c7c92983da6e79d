"""Moderation: banning, reinstating and deleting accounts (README "Who sees what")."""
