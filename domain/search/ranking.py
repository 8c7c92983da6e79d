"""What a ranked list of people is made of: a user and the key that orders them."""

from __future__ import annotations

import uuid
from typing import NamedTuple


class Ranked(NamedTuple):
    """An entry: ``score`` desc, ``followers`` desc, ``user_id``: a total keyset order."""

    user_id: uuid.UUID
    score: int
    followers: int


def keyset_after(score_sql: str, after: Ranked, prefix: str = "after") -> str:
    """SQL true for rows after ``after`` in :class:`Ranked` order (score ``score_sql``); binds
    :func:`keyset_params`."""
    return (
        f"({score_sql} < :{prefix}_score OR ({score_sql} = :{prefix}_score AND"
        f" (s.followers < :{prefix}_followers OR (s.followers = :{prefix}_followers"
        f" AND s.user_id > :{prefix}_id))))"
    )


def keyset_params(after: Ranked, prefix: str = "after") -> dict[str, object]:
    """The parameters :func:`keyset_after` binds."""
    return {
        f"{prefix}_score": after.score,
        f"{prefix}_followers": after.followers,
        f"{prefix}_id": after.user_id,
    }
