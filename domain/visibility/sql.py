"""The SQL twin of :mod:`domain.visibility.rules`, for writes (inside their own
transaction) and bulk reads; tests/integration/test_visibility_agreement.py checks the
two agree. An anonymous viewer is ``NULL``: no block, no follow, not the owner. The
``hidden_*`` expressions are what blocks hide from one viewer's counts
(``rules.visible_count``).
"""

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
    """Boolean: ``muter`` muted ``muted`` (rules: ``Viewer.muted``), one probe of the
    ``mutes`` primary key. Notification writers refuse what the recipient muted."""
    return f"EXISTS (SELECT 1 FROM mutes m WHERE m.muter_id = {muter} AND m.muted_id = {muted})"


def visible_post_sql(
    post: str = ":post",
    viewer: str = ":viewer",
    *,
    lock_viewer: bool = False,
    lock_post: bool = False,
    published: bool = False,
) -> str:
    """A statement selecting the post's columns (id, author_id, caption, media,
    created_at, deleted_at, state, failure_reason, edited_at), no row unless ``viewer``
    may see it (rules.post_visible). ``post`` and ``viewer`` are SQL expressions.
    ``lock_viewer`` (writes by the viewer) also requires the viewer active, under ``FOR
    KEY SHARE``, and the post published; ``published`` asks the latter alone.
    ``lock_viewer`` and ``lock_post`` read the post under ``FOR KEY SHARE``: its
    deletion (``FOR UPDATE``) waits for the write, or the write waits and finds no row.
    """
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
    """A statement selecting the comment's columns (id, post_id, author_id, parent_id,
    body, created_at, deleted_at), no row unless ``viewer`` may see it
    (rules.comment_visible). ``lock`` (a reply to it) reads the comment and its author
    under ``FOR KEY SHARE``.
    """
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
    """Scalar: the counted likes of ``post`` (by active accounts) whose liker is in
    ``partners`` (a uuid[] expression: the viewer's block partners). Probes the likes
    primary key once per partner."""
    return f"""(
    SELECT count(*) FROM likes l JOIN users u ON u.id = l.user_id AND {is_active("u")}
    WHERE l.post_id = {post} AND l.user_id = ANY({partners}))"""


def hidden_comments_sql(post: str, partners: str) -> str:
    """Scalar: the counted comments of ``post`` (live, active author, under a live
    top-level comment by an active author) that a viewer with block ``partners`` does
    not see: written by a partner, or replies to a partner's comment. Driven by the
    partners through ``comments_author_post_idx`` and ``comments_parent_idx``."""
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
    """Scalar: the counted live followers of ``account`` (active ones) that are in
    ``partners``; one probe of ``follows_pair_live_idx`` per partner."""
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
