"""The visibility rule (domain.visibility.rules), pure: no database."""

from __future__ import annotations

import datetime as dt
import itertools
import uuid
from dataclasses import dataclass

import pytest

from domain.visibility.facts import Viewer
from domain.visibility.rules import (
    account_listed,
    account_visible,
    comment_visible,
    content_visible,
    in_explore,
    in_home_feed,
    notification_visible,
    post_visible,
    reported_account_visible,
    reported_post_visible,
    visible_count,
)

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Account:
    id: uuid.UUID
    status: str = "active"
    is_private: bool = False


@dataclass(frozen=True)
class Post:
    id: uuid.UUID
    author_id: uuid.UUID
    deleted_at: dt.datetime | None = None
    state: str = "published"


@dataclass(frozen=True)
class Comment:
    id: uuid.UUID
    post_id: uuid.UUID
    author_id: uuid.UUID
    parent_id: uuid.UUID | None = None
    deleted_at: dt.datetime | None = None


@dataclass(frozen=True)
class Notification:
    recipient_id: uuid.UUID
    actor_id: uuid.UUID | None
    count: int = 1


def account(**kw) -> Account:
    return Account(uuid.uuid4(), **kw)


def test_banned_and_deleted_accounts_are_gone_for_everyone():
    for status in ("banned", "pending_deletion", "deleted"):
        gone = account(status=status)
        for viewer in (Viewer.anonymous(), Viewer(gone.id), Viewer(uuid.uuid4())):
            assert not account_visible(viewer, gone)
            assert not account_listed(viewer, gone)
            assert not content_visible(viewer, gone)
            assert not post_visible(viewer, Post(uuid.uuid4(), gone.id), gone)
    assert not account_visible(Viewer.anonymous(), None)


def test_a_block_hides_lists_and_content_either_way_but_not_the_profile():
    other = account()
    viewer = Viewer(uuid.uuid4(), blocked=frozenset({other.id}), follows=frozenset({other.id}))
    assert account_visible(viewer, other)  # reached directly: where the block is lifted
    assert not account_listed(viewer, other)
    assert not content_visible(viewer, other)  # even with a (stale) follow fact
    assert not post_visible(viewer, Post(uuid.uuid4(), other.id), other)
    me = Account(viewer.id)
    assert account_listed(viewer, me) and content_visible(viewer, me)


@pytest.mark.parametrize(
    ("private", "follows", "owner", "anonymous", "expected"),
    [
        (False, False, False, False, True),
        (False, False, False, True, True),
        (True, False, False, False, False),
        (True, False, False, True, False),
        (True, True, False, False, True),
        (True, False, True, False, True),
    ],
)
def test_private_content_shows_to_the_owner_and_followers(
    private, follows, owner, anonymous, expected
):
    author = account(is_private=private)
    if anonymous:
        viewer = Viewer.anonymous()
    elif owner:
        viewer = Viewer(author.id)
    else:
        viewer = Viewer.of(uuid.uuid4(), follows=[author.id] if follows else [])
    assert content_visible(viewer, author) is expected
    assert post_visible(viewer, Post(uuid.uuid4(), author.id), author) is expected
    assert account_listed(viewer, author)  # listed (in follow lists) either way


def test_a_deleted_post_or_a_mismatched_author_is_not_visible():
    author = account()
    viewer = Viewer(author.id)
    assert not post_visible(viewer, Post(uuid.uuid4(), author.id, deleted_at=NOW), author)
    assert not post_visible(viewer, Post(uuid.uuid4(), uuid.uuid4()), author)
    assert not post_visible(viewer, None, author)
    assert not post_visible(viewer, Post(uuid.uuid4(), author.id), None)


def test_the_home_feed_holds_own_posts_and_followed_authors_only():
    author = account()
    post = Post(uuid.uuid4(), author.id)
    assert not in_home_feed(Viewer(uuid.uuid4()), post, author)
    assert in_home_feed(Viewer.of(uuid.uuid4(), follows=[author.id]), post, author)
    assert in_home_feed(Viewer(author.id), post, author)
    blocked = Viewer.of(uuid.uuid4(), follows=[author.id], blocked=[author.id])
    assert not in_home_feed(blocked, post, author)


@pytest.mark.parametrize("state", ["processing", "failed"])
def test_an_unpublished_post_shows_to_its_author_only_and_never_in_a_feed(state):
    author = account()
    private = account(is_private=True)
    for who in (author, private):
        post = Post(uuid.uuid4(), who.id, state=state)
        assert post_visible(Viewer(who.id), post, who)
        assert not in_home_feed(Viewer(who.id), post, who)
        for viewer in (
            Viewer.anonymous(),
            Viewer(uuid.uuid4()),
            Viewer.of(uuid.uuid4(), follows=[who.id]),
        ):
            assert not post_visible(viewer, post, who)
            assert not in_home_feed(viewer, post, who)
        assert not reported_post_visible(post, who)
        # Nobody's comment shows on it, not even under the author's own eyes.
        comment = Comment(uuid.uuid4(), post.id, who.id)
        assert not comment_visible(Viewer(who.id), comment, author=who, post=post, post_author=who)


def test_a_removed_post_shows_to_nobody():
    author = account()
    post = Post(uuid.uuid4(), author.id, deleted_at=NOW, state="removed")
    assert not post_visible(Viewer(author.id), post, author)
    # and an undeleted row in an unknown state shows to nobody either
    odd = Post(uuid.uuid4(), author.id, state="removed")
    assert not post_visible(Viewer(author.id), odd, author)
    assert not post_visible(Viewer.anonymous(), odd, author)


def thread(
    viewer: Viewer,
    *,
    author,
    parent_author,
    post_author,
    post_deleted=False,
    parent_deleted=False,
    comment_deleted=False,
) -> bool:
    post = Post(uuid.uuid4(), post_author.id, deleted_at=NOW if post_deleted else None)
    parent = Comment(
        uuid.uuid4(), post.id, parent_author.id, deleted_at=NOW if parent_deleted else None
    )
    reply = Comment(
        uuid.uuid4(),
        post.id,
        author.id,
        parent_id=parent.id,
        deleted_at=NOW if comment_deleted else None,
    )
    return comment_visible(
        viewer,
        reply,
        author=author,
        post=post,
        post_author=post_author,
        parent=parent,
        parent_author=parent_author,
    )


def test_a_reply_shows_only_under_a_top_level_comment_that_shows():
    me, replier, commenter, poster = account(), account(), account(), account()
    viewer = Viewer(me.id)
    ok = {"author": replier, "parent_author": commenter, "post_author": poster}
    assert thread(viewer, **ok)
    assert not thread(viewer, **ok, parent_deleted=True)
    assert not thread(viewer, **ok, comment_deleted=True)
    assert not thread(viewer, **ok, post_deleted=True)
    assert not thread(viewer, **{**ok, "parent_author": account(status="banned")})
    assert not thread(viewer, **{**ok, "author": account(status="deleted")})
    assert not thread(viewer, **{**ok, "post_author": account(status="banned")})
    # A block with the one replied to hides the whole thread from this viewer only.
    assert not thread(Viewer.of(me.id, blocked=[commenter.id]), **ok)
    assert thread(Viewer.of(uuid.uuid4(), blocked=[uuid.uuid4()]), **ok)
    # A private post author: only followers see the comments under it.
    private = account(is_private=True)
    assert not thread(viewer, **{**ok, "post_author": private})
    assert thread(Viewer.of(me.id, follows=[private.id]), **{**ok, "post_author": private})


def test_a_comment_needs_its_own_post_and_author_facts():
    author, poster = account(), account()
    post = Post(uuid.uuid4(), poster.id)
    comment = Comment(uuid.uuid4(), post.id, author.id)
    viewer = Viewer.anonymous()
    args = {"author": author, "post": post, "post_author": poster}
    assert comment_visible(viewer, comment, **args)
    assert not comment_visible(viewer, comment, **{**args, "author": account()})
    assert not comment_visible(viewer, comment, **{**args, "post": Post(uuid.uuid4(), poster.id)})
    assert not comment_visible(viewer, None, **args)
    reply = Comment(uuid.uuid4(), post.id, author.id, parent_id=comment.id)
    assert not comment_visible(viewer, reply, **args)  # parent facts missing
    assert comment_visible(viewer, reply, **args, parent=comment, parent_author=author)


def test_notifications_show_to_their_recipient_with_someone_behind_them():
    me, actor = account(), account()
    viewer = Viewer(me.id)
    assert notification_visible(viewer, Notification(me.id, actor.id), actor)
    assert notification_visible(viewer, Notification(me.id, None, count=7), None)  # a digest
    assert not notification_visible(viewer, Notification(me.id, actor.id, count=0), actor)
    assert not notification_visible(viewer, Notification(uuid.uuid4(), actor.id), actor)
    assert not notification_visible(Viewer.anonymous(), Notification(me.id, actor.id), actor)
    assert not notification_visible(
        Viewer.of(me.id, blocked=[actor.id]), Notification(me.id, actor.id), actor
    )
    banned = account(status="banned")
    assert not notification_visible(viewer, Notification(me.id, banned.id), banned)
    assert not notification_visible(viewer, Notification(me.id, actor.id), None)


def test_the_rule_is_total_over_every_combination():
    """No combination of facts raises, and nothing is visible that its account is not."""
    for status, private, blocked, follows, kind in itertools.product(
        ("active", "banned", "deleted"),
        (False, True),
        (False, True),
        (False, True),
        ("anonymous", "owner", "other"),
    ):
        author = account(status=status, is_private=private)
        vid = {"anonymous": None, "owner": author.id, "other": uuid.uuid4()}[kind]
        viewer = Viewer.of(
            vid, blocked=[author.id] if blocked else [], follows=[author.id] if follows else []
        )
        post = Post(uuid.uuid4(), author.id)
        if post_visible(viewer, post, author):
            assert content_visible(viewer, author) and account_listed(viewer, author)
        if account_listed(viewer, author):
            assert account_visible(viewer, author)


def test_visible_counts_never_go_below_zero():
    assert visible_count(5, 2) == 3
    assert visible_count(1, 3) == 0


def test_a_mute_keeps_posts_out_of_the_home_feed_only():
    author = account()
    post = Post(uuid.uuid4(), author.id)
    muter = Viewer.of(uuid.uuid4(), follows=[author.id], muted=[author.id])
    assert not in_home_feed(muter, post, author)
    # Everywhere else the post and the account show as before.
    assert post_visible(muter, post, author)
    assert account_visible(muter, author) and account_listed(muter, author)
    assert content_visible(muter, author)
    # One's own posts cannot be muted away; a mute fact without a follow changes nothing.
    assert in_home_feed(Viewer.of(author.id, muted=[author.id]), post, author)
    assert not in_home_feed(Viewer.of(uuid.uuid4(), muted=[author.id]), post, author)


def test_a_mute_hides_the_muted_actors_notifications():
    actor = account()
    me = uuid.uuid4()
    note = Notification(me, actor.id)
    assert notification_visible(Viewer(me), note, actor)
    assert not notification_visible(Viewer.of(me, muted=[actor.id]), note, actor)
    # A digest has no actor: a mute cannot hide it.
    assert notification_visible(Viewer.of(me, muted=[actor.id]), Notification(me, None), None)


@pytest.mark.parametrize(
    ("status", "private", "deleted", "expected"),
    [
        ("active", False, False, True),
        ("active", True, False, True),  # whatever its privacy
        ("banned", True, False, True),  # a moderator reviews what was banned
        ("pending_deletion", False, False, False),
        ("deleted", False, False, False),
        ("active", False, True, False),  # removed or deleted: nothing to review
    ],
)
def test_moderators_see_reported_content_whatever_its_privacy(status, private, deleted, expected):
    author = account(status=status, is_private=private)
    post = Post(uuid.uuid4(), author.id, deleted_at=NOW if deleted else None)
    assert reported_post_visible(post, author) is expected
    assert reported_account_visible(author) is (status in ("active", "banned"))
    assert not reported_post_visible(post, account())  # not its author
    assert not reported_post_visible(None, author)


def test_explore_shows_others_visible_posts_followed_or_not():
    author = account()
    post = Post(uuid.uuid4(), author.id)
    assert in_explore(Viewer(uuid.uuid4()), post, author)
    assert in_explore(Viewer.of(uuid.uuid4(), follows=[author.id]), post, author)  # fallback
    assert not in_explore(Viewer(author.id), post, author)  # never one's own
    assert not in_explore(Viewer.of(uuid.uuid4(), muted=[author.id]), post, author)
    assert not in_explore(Viewer.of(uuid.uuid4(), blocked=[author.id]), post, author)
    private = account(is_private=True)
    theirs = Post(uuid.uuid4(), private.id)
    assert not in_explore(Viewer(uuid.uuid4()), theirs, private)
    assert in_explore(Viewer.of(uuid.uuid4(), follows=[private.id]), theirs, private)
    for status in ("banned", "deleted", "pending_deletion"):
        gone = account(status=status)
        assert not in_explore(Viewer(uuid.uuid4()), Post(uuid.uuid4(), gone.id), gone)
    assert not in_explore(Viewer(uuid.uuid4()), Post(uuid.uuid4(), author.id, NOW), author)
    assert not in_explore(
        Viewer(uuid.uuid4()), Post(uuid.uuid4(), author.id, state="processing"), author
    )
