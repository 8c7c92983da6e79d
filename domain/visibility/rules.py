"""Who may see what: the one rule, pure (docs/api/visibility.md "Who sees what" states
it). Every GraphQL edge that returns an account, post, comment or notification asks these
functions over facts the dataloaders load (:mod:`domain.visibility.readers`); writes and
bulk reads use the SQL twin (:mod:`domain.visibility.sql`), and
tests/integration/test_visibility_agreement.py keeps the two in agreement.
"""

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
    """Whether the account itself (profile, counts, flags) may be shown: it exists and is
    active; a block does not hide a profile reached directly."""
    return account is not None and account.status == ACTIVE


def account_listed(viewer: Viewer, account: AccountFacts | None) -> bool:
    """Whether the account may appear in a list (followers, likers, requests) or as the
    author or actor of something the viewer sees: visible, and no block either way
    between it and the viewer."""
    return account_visible(viewer, account) and (
        account.id == viewer.id or account.id not in viewer.blocked  # type: ignore[union-attr]
    )


def content_visible(viewer: Viewer, account: AccountFacts | None) -> bool:
    """Whether the account's posts and follow lists may be shown: listed, and public,
    the viewer's own, or followed by the viewer."""
    if not account_listed(viewer, account):
        return False
    assert account is not None
    return not account.is_private or account.id == viewer.id or account.id in viewer.follows


def post_visible(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Whether the post may be shown: it exists, is not deleted, its author's content is
    visible to the viewer, and it is published, or processing or failed and the viewer
    is its author. ``author`` must be the post's author."""
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
    """Whether the post may be shown and is published: what a like, a comment, a home
    feed or an engagement event needs (nobody engages with a post still processing)."""
    return post is not None and post.state == PUBLISHED and post_visible(viewer, post, author)


def in_home_feed(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Whether the post belongs in the viewer's home feed now: visible, and the viewer's
    own or by someone the viewer follows and has not muted (so an unfollow, a block or a
    mute takes it out even if its fan-out was still queued; unmuting brings it back)."""
    if not post_published_visible(viewer, post, author):
        return False
    assert post is not None
    return post.author_id == viewer.id or (
        post.author_id in viewer.follows and post.author_id not in viewer.muted
    )


def in_explore(viewer: Viewer, post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Whether the post may be shown in the viewer's explore (docs/api/explore.md "Explore"):
    published and visible to them (so no banned, deleted or blocked author, either way,
    and no private one they do not follow), not their own, and not by someone they
    muted. Posts of accounts they follow are allowed: explore orders them last."""
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
    """Whether the comment may be shown: it is live, its author is listed for the
    viewer, its post is visible, and, for a reply, the top-level comment it answers is
    live and its author listed too (a reply is never shown without its thread: under a
    comment hidden by a ban or a block, other people's replies are hidden with it, for
    the same viewers, and counted out of ``commentCount``)."""
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
    """Whether the notification may be shown: it is the viewer's, someone is still
    behind it (``count`` > 0), and its actor, if any, is listed for the viewer and not
    muted by them. The post or comment it points to is decided on its own (null when
    not visible)."""
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


#: Account states whose reported content a moderator still reviews (an account its
#: owner is deleting, or deleted, is gone for moderators too).
_REVIEWABLE = ("active", "banned")


def reported_account_visible(account: AccountFacts | None) -> bool:
    """Whether a moderator, reading a report, may see the reported account: it exists and
    is active or banned (whatever its privacy or blocks)."""
    return account is not None and account.status in _REVIEWABLE


def reported_post_visible(post: PostFacts | None, author: AccountFacts | None) -> bool:
    """Whether a moderator, reading a report, may see the reported post: it is not
    deleted (nor removed) and its author is reviewable (:func:`reported_account_visible`),
    whatever the author's privacy."""
    return (
        post is not None
        and post.deleted_at is None
        and post.state == PUBLISHED
        and author is not None
        and author.id == post.author_id
        and reported_account_visible(author)
    )


def visible_count(total: int, hidden: int) -> int:
    """A count as the viewer may see it: the exact ``total`` (a counter, which already
    leaves out banned and deleted accounts) less what blocks hide from this viewer."""
    return max(0, total - hidden)
