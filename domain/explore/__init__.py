"""Explore: the discovery feed, its video variant, and trending hashtags (README
"Explore"), assembled at read time from the trending posts the feed store keeps."""
