"""``searchUsers`` and ``viewer.suggestedFollows``: ranked connections of users.

Both page a ranked list frozen on the first page (domain.search.paging): the cursor
names the snapshot, the offset in it and the last entry's rank (the keyset used when
the snapshot is gone). Users are hydrated through the request's dataloaders and
checked like any User node (banned, deleted or blocked either way: dropped), so a page
costs a constant number of statements whatever ``first`` is.
"""
