"""Accounts: users, passwords, sessions and tokens."""
