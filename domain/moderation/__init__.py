"""Moderation: banning, reinstating and deleting accounts (docs/api/visibility.md "Who sees
what")."""
