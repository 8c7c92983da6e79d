"""Who may see what: the one pure rule (docs/api/visibility.md "Who sees what"); its SQL twin is
:mod:`domain.visibility.sql` (tests/integration/test_visibility_agreement.py)."""

from __future__ import annotations

from domain.visibility.facts import (
    ACTIVE,
    AUTHOR_ONLY,
    PUBLISHED,
    AccountFacts,
    CommentFacts,
    NotificationFacts,
    PostFacts,
    Viewer,
)


def account_visible(viewer: Viewer, account: AccountFacts | None) -> bool:
    """The profile may be shown: it exists and is active (a block does not hide it)."""
    return account is not None and account.status == ACTIVE


def account_listed(viewer: Viewer, account: AccountFacts | None) -> bool:
    """It may appear in lists or as author/actor: visible, no block either way."""
    return account_visible(viewer, account) and (
        account.id == viewer.id or account.id not in viewer.blocked  # type: ignore[union-attr]
    )


def content_visible(viewer: Viewer, account: AccountFacts | None) -> bool:
    """Its posts and follow lists may be shown: listed, and public, own or followed."""
    if not account_listed(viewer, account):
        return False
    assert account is not None
    return not account.is_private or account.id == viewer.id or account.id in viewer.follows


def post_visible(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """The post may be shown: live, author's content visible, published (or the viewer's own
    processing or failed)."""
    return (
        post is not None
        and post.deleted_at is None
        and author is not None
        and author.id == post.author_id
        and (
            post.state == PUBLISHED
            or (post.state in AUTHOR_ONLY and viewer.id is not None and viewer.id == author.id)
        )
        and content_visible(viewer, author)
    )


def post_published_visible(
    viewer: Viewer, post: PostFacts | None, author: AccountFacts | None
) -> bool:
    """Visible and published: what engaging or a feed needs."""
    return post is not None and post.state == PUBLISHED and post_visible(viewer, post, author)


def in_home_feed(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Visible, and own or by a followed, unmuted account."""
    if not post_published_visible(viewer, post, author):
        return False
    assert post is not None
    return post.author_id == viewer.id or (
        post.author_id in viewer.follows and post.author_id not in viewer.muted
    )


def in_explore(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Published, visible, not own, not muted (docs/api/explore.md "Explore"); followed authors
    allowed."""
    if not post_published_visible(viewer, post, author):
        return False
    assert post is not None
    return post.author_id != viewer.id and post.author_id not in viewer.muted


def comment_visible(
    viewer: Viewer,
    comment: CommentFacts | None,
    *,
    author: AccountFacts | None,
    post: PostFacts | None,
    post_author: AccountFacts | None,
    parent: CommentFacts | None = None,
    parent_author: AccountFacts | None = None,
) -> bool:
    """Live, author listed, post visible, and for a reply its top-level comment live with a listed
    author (hidden threads leave ``commentCount``)."""
    if comment is None or comment.deleted_at is not None:
        return False
    if author is None or author.id != comment.author_id or not account_listed(viewer, author):
        return False
    if (
        post is None
        or post.id != comment.post_id
        or not post_published_visible(viewer, post, post_author)
    ):
        return False
    if comment.parent_id is None:
        return True
    return (
        parent is not None
        and parent.id == comment.parent_id
        and parent.deleted_at is None
        and parent_author is not None
        and parent_author.id == parent.author_id
        and account_listed(viewer, parent_author)
    )


def notification_visible(
    viewer: Viewer, notification: NotificationFacts | None, actor: AccountFacts | None
) -> bool:
    """The viewer's, ``count`` > 0, actor (if any) listed and not muted."""
    if notification is None or viewer.id is None or notification.recipient_id != viewer.id:
        return False
    if notification.count <= 0:
        return False
    return notification.actor_id is None or (
        actor is not None
        and actor.id == notification.actor_id
        and account_listed(viewer, actor)
        and actor.id not in viewer.muted
    )


#: Statuses whose reported content moderators still review.
_REVIEWABLE = ("active", "banned")


def reported_account_visible(account: AccountFacts | None) -> bool:
    """For a moderator: the account exists and is active or banned."""
    return account is not None and account.status in _REVIEWABLE


def reported_post_visible(post: PostFacts | None, author: AccountFacts | None) -> bool:
    """For a moderator: not deleted nor removed, author reviewable."""
    return (
        post is not None
        and post.deleted_at is None
        and post.state == PUBLISHED
        and author is not None
        and author.id == post.author_id
        and reported_account_visible(author)
    )


def visible_count(total: int, hidden: int) -> int:
    """``total`` (already without inactive accounts) less what blocks hide."""
    return max(0, total - hidden)
