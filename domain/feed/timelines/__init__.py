"""Redis timelines: the per-user home feeds and the per-author recent-posts stores.

A timeline is a sorted set under a ``{id}``-hash-tagged key (so every key of one user
lives in one Redis Cluster slot):

* member: the post's UUIDv7 as 16 raw bytes; score: its ``created_at`` in microseconds
  since the epoch (an integer below 2^53, so the double is exact). Equal scores order
  by member bytes, which is PostgreSQL's ``uuid`` order: (score, member) is the same
  total order as ``(created_at, id)`` in SQL, and cursors mean the same on both.
* a sentinel member ``b""`` at a score <= 0 (rank 0) marks the key as *complete* for
  its window: a key that exists holds every post it should that is not older than its
  oldest entry (docs/design.md "Home feed"), and an empty feed still exists. Reads use
  scores > 0 only. The sentinel's score, ``-(2 * run + whole)``, carries two facts:
  ``whole``, the key holds every post it should, with no lower bound (it was rebuilt
  from fewer than ``max_len`` posts and never trimmed since), so older entries may be
  added to it; and ``run``, the stamp of the Redis server run that built the key (52
  bits of its ``run_id``). A server that restarted (from a snapshot or an append-only
  file that may lack the last writes) or failed over to a replica has a new run: a read
  finds the key's stamp differs from the run of the connection it was read on and
  rebuilds the key, as if it were missing. So a feed store that lost acknowledged
  writes never serves a key that says it is complete but is not.
* a timeline that is not whole is exact from its oldest entry up: writers leave out an
  entry older than that (it would open a gap between it and the window; PostgreSQL
  serves it past the window), and a timeline that is not whole and holds no entry is
  dropped (rebuilt on read).

On a Redis Cluster every script call stays inside one slot: a batch over many owners
is one script call per slot (usually per owner) sent in one round trip per node; on a
standalone Redis it is one call for the whole batch. The store is the
:class:`domain.feed.ports.Timelines` port (adapters.feedstore.timelines on Redis).

Writers add to timelines that exist (or are being rebuilt) and never create one; a
missing (or stale) timeline is rebuilt from PostgreSQL by ``Timelines.rebuild``, which
first drops the timeline and creates a ``:build`` key that concurrent writers add to,
then swaps it in atomically, so a post committed during a rebuild is never lost. Removals (deletes,
unfollows) that meet a rebuild record their members in a ``:gone`` set, which the swap
leaves out of what the rebuild loaded, so a removed post never comes back either.
"""

from domain.feed.timelines.entries import (
    SENTINEL,
    Entry,
    score_of,
    sentinel_parts,
    sentinel_score,
    time_of,
)

__all__ = ["SENTINEL", "Entry", "score_of", "sentinel_parts", "sentinel_score", "time_of"]
