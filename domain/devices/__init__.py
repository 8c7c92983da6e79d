"""Push device tokens per user and session (docs/api/push.md "Push")."""
