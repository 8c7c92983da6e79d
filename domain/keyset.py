"""The one keyset position of Roost's lists, ``(time, id)``: a page continues strictly
past its last row's position; ``schema.pagination`` makes it the opaque cursor.
"""

from __future__ import annotations

import datetime as dt
import uuid

#: (timestamp, id): an aware UTC datetime with microseconds and the row's UUID.
Position = tuple[dt.datetime, uuid.UUID]
