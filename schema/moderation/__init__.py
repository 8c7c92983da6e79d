"""Reports and moderation (README "Reports and moderation"): what anyone reports, and
what only moderators see and do."""
