"""The one keyset position of Roost's lists, ``(time, id)``: a page continues strictly
past its last row's position; ``schema.pagination`` makes it the opaque cursor.
"""

from __future__ import annotations

import datetime as dt
import uuid

#: (timestamp, id): an aware UTC datetime with microseconds and the row's UUID.
Position = tuple[dt.datetime, uuid.UUID]


def walk(columns: str, *, newest_first: bool, backward: bool) -> tuple[str, str]:
    """The keyset condition (on ``:ts``, ``:id``) and ``ORDER BY`` of a page of a list
    ordered by ``columns`` (``"created_at, id"``), newest first or oldest first: forward
    (strictly past the bound, in the list's order) or ``backward`` (strictly before it,
    in the reverse order: the caller reverses the rows it reads)."""
    ascending = newest_first == backward
    direction = "" if ascending else " DESC"
    order = ", ".join(f"{c.strip()}{direction}" for c in columns.split(","))
    return f"({columns}) {'>' if ascending else '<'} (:ts, :id)", order
