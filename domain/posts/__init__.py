"""Posts: captions with media, authored by users, soft-deleted."""
