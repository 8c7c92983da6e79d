"""Finding people: user search and suggested follows, paged from frozen ranked lists
(docs/api/search.md "User search")."""
