"""How long a shared cache may keep an anonymous read of public data: per-field and
per-type hints in seconds, the smallest over the fields a document reads wins
(app/cache_policy.py applies them to GET responses; docs/api/http.md "Caching").

- :data:`FIELD_HINTS` ``(type, field)``: the field's own hint, or :data:`VIEWER` for a
  field whose value depends on who asks (the response is then ``no-store``).
- :data:`TYPE_HINTS`: a field without a hint that returns one of these object types takes
  the type's; one returning any other object, interface or union type allows no caching
  (0). A field of a scalar or enum type without a hint adds no limit.
"""

from __future__ import annotations

from typing import Final

#: The hint of a field whose value depends on the viewer.
VIEWER: Final = "viewer"

_PROFILE = 60  # accounts, posts, comments, hashtags
_COUNT = 15  # counters and lists move faster
_MEDIA = 300  # published media never change

TYPE_HINTS: Final[dict[str, int]] = {
    "User": _PROFILE,
    "Post": _PROFILE,
    "Comment": _PROFILE,
    "Hashtag": _PROFILE,
    "Media": _MEDIA,
    "MediaVariant": _MEDIA,
    "PageInfo": _COUNT,
    **{
        name: _COUNT
        for area in ("User", "Post", "Comment", "Like", "UserSearch")
        for name in (f"{area}Connection", f"{area}Edge")
    },
}

FIELD_HINTS: Final[dict[tuple[str, str], int | str]] = {
    ("Query", "node"): _PROFILE,
    ("Query", "nodes"): _PROFILE,
    ("Query", "user"): _PROFILE,
    ("Query", "hashtag"): _PROFILE,
    ("Query", "searchUsers"): _COUNT,
    ("Query", "viewer"): VIEWER,
    ("Query", "moderation"): VIEWER,
    **{("User", f): _COUNT for f in ("followerCount", "followingCount", "postCount")},
    **{("Post", f): _COUNT for f in ("likeCount", "commentCount")},
    **{
        ("User", f): VIEWER
        for f in (
            "followedByViewer",
            "followsViewer",
            "blockedWithViewer",
            "mutedByViewer",
            "followRequestedByViewer",
            "feed",
            "notifications",
            "unreadNotificationCount",
            "suggestedFollows",
            "blockedUsers",
            "mutedUsers",
            "dataExport",
            "followRequests",
        )
    },
    ("Post", "viewerHasLiked"): VIEWER,
}
