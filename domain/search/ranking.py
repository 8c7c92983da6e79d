"""What a ranked list of people is made of: a user and the key that orders them."""

from __future__ import annotations

import uuid
from typing import NamedTuple


class Ranked(NamedTuple):
    """One entry of a ranked list: ``score`` (match tier, or followees following)
    descending, then ``followers`` (``user_search``'s signal) descending, then
    ``user_id``: a total order a keyset can resume."""

    user_id: uuid.UUID
    score: int
    followers: int


def keyset_after(score_sql: str, after: Ranked, prefix: str = "after") -> str:
    """SQL that is true for the rows that come after ``after`` in the order of
    :class:`Ranked`, whose score is ``score_sql`` and whose columns are ``s.followers``
    and ``s.user_id``; binds ``:<prefix>_score``, ``:<prefix>_followers``,
    ``:<prefix>_id`` (see :func:`keyset_params`)."""
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
