"""The keyset position ``(time, id)`` of Roost's lists; ``schema.pagination`` makes it the
cursor."""

from __future__ import annotations

import datetime as dt
import uuid

#: (timestamp, id): an aware UTC datetime with microseconds and the row's UUID.
Position = tuple[dt.datetime, uuid.UUID]


def walk(columns: str, *, newest_first: bool, backward: bool) -> tuple[str, str]:
    """The keyset condition (``:ts``, ``:id``) and ``ORDER BY`` over ``columns``: forward strictly
    past the bound, or ``backward`` strictly before it in reverse order (the caller reverses)."""
    ascending = newest_first == backward
    direction = "" if ascending else " DESC"
    order = ", ".join(f"{c.strip()}{direction}" for c in columns.split(","))
    return f"({columns}) {'>' if ascending else '<'} (:ts, :id)", order
