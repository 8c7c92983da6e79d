"""Engagement: likes, comments (one level of replies) and hashtags."""
