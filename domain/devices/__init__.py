"""Push device tokens: registered per user and session, removed at log-out of that
session and when the push provider says a token is no longer valid (docs/api/push.md "Push")."""
