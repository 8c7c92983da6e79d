"""The one keyset position of Roost's lists: ``(time, id)``.

Every keyset-paged list orders by a timestamp and a UUID that breaks its ties: posts
(``created_at``, ``id``: the home feed's timeline entries hold the same pair as
microseconds and the post id, see ``domain.feed.timelines``), follows and follow
requests, blocks and mutes, likes, comments, notifications and reports. A page
continues strictly past the position of the last row it returned; ``schema.pagination``
turns a position into the one opaque cursor format every connection uses.
"""

from __future__ import annotations

import datetime as dt
import uuid

#: (timestamp, id): an aware UTC datetime with microseconds and the row's UUID.
Position = tuple[dt.datetime, uuid.UUID]
