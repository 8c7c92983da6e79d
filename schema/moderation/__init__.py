"""Reports and moderation (docs/api/moderation.md "Reports and moderation"): what anyone
reports, and what only moderators see and do."""
