"""Redis timelines: the per-user home feeds and the per-author recent-posts stores.

A timeline is a sorted set under a ``{id}``-hash-tagged key (so every key of one user
lives in one Redis Cluster slot):

* member: the post's UUIDv7 as 16 raw bytes; score: its ``created_at`` in microseconds
  since the epoch (an integer below 2^53, so the double is exact). Equal scores order
  by member bytes, which is PostgreSQL's ``uuid`` order: (score, member) is the same
  total order as ``(created_at, id)`` in SQL, and cursors mean the same on both.
* a sentinel member ``b""`` at score 0 marks the key as *complete* for its window: a
  key that exists holds every post it should (docs/design.md "Home feed"), and an empty
  feed still exists. Reads use scores > 0 only.

On a Redis Cluster every script call stays inside one slot: a batch over many owners
is one script call per slot (usually per owner) sent in one round trip per node; on a
standalone Redis it is one call for the whole batch. The store is the
:class:`domain.feed.ports.Timelines` port (adapters.feedstore.timelines on Redis).

Writers add to timelines that exist (or are being rebuilt) and never create one; a
missing timeline is rebuilt from PostgreSQL by ``Timelines.rebuild``, which
first creates a ``:build`` key that concurrent writers also add to, then swaps it in
atomically, so a post committed during a rebuild is never lost. Removals (deletes,
unfollows) that meet a rebuild record their members in a ``:gone`` set, which the swap
leaves out of what the rebuild loaded, so a removed post never comes back either.
"""

from domain.feed.timelines.entries import SENTINEL, Entry, score_of, time_of

__all__ = ["SENTINEL", "Entry", "score_of", "time_of"]
