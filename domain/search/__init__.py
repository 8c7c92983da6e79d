"""Finding people: user search (prefix and fuzzy, ranked) and suggested follows (friends
of friends), both paged from a frozen ranked list (docs/api/search.md "User search", "Suggested
follows")."""
