"""The SQL twin of :mod:`domain.visibility.rules` for writes and bulk reads; an anonymous viewer is
``NULL``. ``hidden_*``: what blocks hide from counts."""

from __future__ import annotations

from domain.visibility.predicates import is_active, is_live

#: Accounts with a block between them and ``{viewer}``, either way, as a uuid[] expression.
BLOCK_PARTNERS = (
    "ARRAY(SELECT blocked_id FROM blocks WHERE blocker_id = {viewer}"
    " UNION SELECT blocker_id FROM blocks WHERE blocked_id = {viewer})"
)


def _blocked(a: str, viewer: str) -> str:
    return (
        "EXISTS (SELECT 1 FROM blocks b"
        f" WHERE (b.blocker_id = {a} AND b.blocked_id = {viewer})"
        f" OR (b.blocker_id = {viewer} AND b.blocked_id = {a}))"
    )


def muted_sql(muter: str, muted: str) -> str:
    """Boolean: ``muter`` muted ``muted``, one ``mutes`` key probe."""
    return f"EXISTS (SELECT 1 FROM mutes m WHERE m.muter_id = {muter} AND m.muted_id = {muted})"


def visible_post_sql(
    post: str = ":post",
    viewer: str = ":viewer",
    *,
    lock_viewer: bool = False,
    lock_post: bool = False,
    published: bool = False,
) -> str:
    """A statement of the post's columns, no row unless ``viewer`` may see it (rules.post_visible).
    ``lock_viewer`` also requires the viewer active (``FOR KEY SHARE``) and the post published
    (``published`` alone); ``lock_viewer``/``lock_post`` share-lock the post so its deletion
    waits."""
    me = f"JOIN users v ON v.id = {viewer} AND {is_active('v')}" if lock_viewer else ""
    lock = "FOR KEY SHARE OF p, v" if lock_viewer else "FOR KEY SHARE OF p" if lock_post else ""
    state = (
        "p.state = 'published'"
        if lock_viewer or published
        else f"(p.state = 'published' OR (p.state IN ('processing', 'failed')"
        f" AND p.author_id = {viewer}))"
    )
    return f"""
    SELECT p.id, p.author_id, p.caption, p.media, p.created_at, p.deleted_at,
           p.state, p.failure_reason, p.edited_at
    FROM posts p JOIN users a ON a.id = p.author_id AND {is_active("a")} {me}
    WHERE p.id = {post} AND {is_live("p")} AND {state}
      AND NOT {_blocked("a.id", viewer)}
      AND (NOT a.is_private OR a.id = {viewer} OR EXISTS (
          SELECT 1 FROM follows f
          WHERE f.follower_id = {viewer} AND f.followee_id = a.id AND {is_live("f")}))
    {lock}
    """


def visible_comment_sql(
    comment: str = ":comment", viewer: str = ":viewer", *, lock: bool = False
) -> str:
    """A statement of the comment's columns, no row unless visible (rules.comment_visible); ``lock``
    share-locks comment and author."""
    locking = "FOR KEY SHARE OF c, ca" if lock else ""
    return f"""
    SELECT c.id, c.post_id, c.author_id, c.parent_id, c.body, c.created_at, c.deleted_at
    FROM comments c
    JOIN users ca ON ca.id = c.author_id AND {is_active("ca")}
    LEFT JOIN comments pc ON pc.id = c.parent_id
    LEFT JOIN users pa ON pa.id = pc.author_id
    WHERE c.id = {comment} AND {is_live("c")}
      AND NOT {_blocked("ca.id", viewer)}
      AND (c.parent_id IS NULL OR (
          {is_live("pc")} AND {is_active("pa")} AND NOT {_blocked("pa.id", viewer)}))
      AND EXISTS ({visible_post_sql("c.post_id", viewer, published=True)})
    {locking}
    """


def hidden_likes_sql(post: str, partners: str) -> str:
    """Scalar: counted likes of ``post`` by ``partners`` (uuid[])."""
    return f"""(
    SELECT count(*) FROM likes l JOIN users u ON u.id = l.user_id AND {is_active("u")}
    WHERE l.post_id = {post} AND l.user_id = ANY({partners}))"""


def hidden_comments_sql(post: str, partners: str) -> str:
    """Scalar: counted comments of ``post`` hidden by ``partners``: theirs, or replies to theirs."""
    return f"""(
    SELECT count(*) FROM (
        SELECT c.id FROM comments c
        JOIN users ca ON ca.id = c.author_id AND {is_active("ca")}
        LEFT JOIN comments pc ON pc.id = c.parent_id
        LEFT JOIN users pa ON pa.id = pc.author_id
        WHERE c.author_id = ANY({partners}) AND c.post_id = {post} AND {is_live("c")}
          AND (c.parent_id IS NULL OR ({is_live("pc")} AND {is_active("pa")}))
        UNION
        SELECT r.id FROM comments pc
        JOIN users pa ON pa.id = pc.author_id AND {is_active("pa")}
        JOIN comments r ON r.parent_id = pc.id AND {is_live("r")}
        JOIN users ra ON ra.id = r.author_id AND {is_active("ra")}
        WHERE pc.author_id = ANY({partners}) AND pc.post_id = {post}
          AND pc.parent_id IS NULL AND {is_live("pc")}
    ) h)"""


def hidden_followers_sql(account: str, partners: str) -> str:
    """Scalar: counted live followers of ``account`` in ``partners``."""
    return f"""(
    SELECT count(*) FROM follows f JOIN users u ON u.id = f.follower_id AND {is_active("u")}
    WHERE f.followee_id = {account} AND f.follower_id = ANY({partners})
      AND {is_live("f")})"""


def hidden_following_sql(account: str, partners: str) -> str:
    """Scalar: the counted live followees of ``account`` (active ones) in ``partners``."""
    return f"""(
    SELECT count(*) FROM follows f JOIN users u ON u.id = f.followee_id AND {is_active("u")}
    WHERE f.follower_id = {account} AND f.followee_id = ANY({partners})
      AND {is_live("f")})"""
