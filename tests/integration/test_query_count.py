"""Per-request dataloaders: a page costs a constant number of SQL round trips, whatever
its size (docs/design.md "GraphQL API conventions"). Counts the statements the engine sends
to PostgreSQL while the API answers one request."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text

from domain.social.block_user import block_user
from domain.social.follow_user import follow_user
from tests.support.checks import measured

#: Round trips allowed for one page, whatever its size: the lookup, the page, the users,
#: the counts and the three viewer flags, with a little room for an extra batch.
MAX_STATEMENTS = 10

USER_FIELDS = "id username followerCount followingCount followedByViewer followsViewer"
FOLLOWERS = f"""query($u: String!, $n: Int!) {{ user(username: $u) {{
  followers(first: $n) {{ totalCount
    edges {{ node {{ {USER_FIELDS} blockedWithViewer }} }} }} }} }}"""
NODES = f"""query($ids: [ID!]!) {{ nodes(ids: $ids) {{
  ... on User {{ {USER_FIELDS} blockedWithViewer }} }} }}"""


#: Indexes (into the fans) of the viewer's relations set up by :func:`star_graph`.
VIEWER_FOLLOWS = set(range(0, 40, 2))
FOLLOW_VIEWER = set(range(1, 40, 3))
BLOCKED = {4, 7, 55}  # 4 followed the viewer and was followed; 7 followed the viewer


@pytest.fixture
async def star_graph(make_users, engine, settings):
    """A star with 60 fans and the viewer as followers; the viewer follows, is followed by
    and then blocks some fans, and fans 0-9 each follow the next fan."""
    star, viewer = await make_users(2, prefix="star")
    fans = await make_users(60, prefix="fan")
    shards = settings.counter_shards

    async def follow(a, b):
        outcome = await follow_user(engine, a.id, b.id, counter_shards=shards)
        assert outcome.created

    for fan in fans:
        await follow(fan, star)
    await follow(viewer, star)
    for i in range(10):
        await follow(fans[i], fans[i + 1])
    for i in sorted(VIEWER_FOLLOWS):
        await follow(viewer, fans[i])
    for i in sorted(FOLLOW_VIEWER):
        await follow(fans[i], viewer)
    for i in sorted(BLOCKED):
        assert await block_user(engine, viewer.id, fans[i].id, counter_shards=shards)
    return star, viewer, fans


def check_users(nodes: list[dict], fans) -> None:
    """Assert every node carries the counts and viewer flags that star_graph implies, as
    the viewer sees them: a fan the viewer blocked counts in nobody's followers or
    following for the viewer (docs/api/visibility.md "Who sees what")."""
    index = {f.username: i for i, f in enumerate(fans)}
    for node in nodes:
        i = index[node["username"]]
        follows_viewer = i in FOLLOW_VIEWER and i not in BLOCKED
        followed = i in VIEWER_FOLLOWS and i not in BLOCKED
        assert node["followedByViewer"] is followed, node
        assert node["followsViewer"] is follows_viewer, node
        assert node["blockedWithViewer"] is (i in BLOCKED), node
        followed_by_previous = 1 <= i <= 10 and (i - 1) not in BLOCKED
        follows_next = i < 10 and (i + 1) not in BLOCKED
        assert node["followerCount"] == followed_by_previous + followed, node
        assert node["followingCount"] == 1 + follows_next + follows_viewer, node


async def test_follower_page_costs_constant_round_trips(gql, engine, star_graph):
    star, viewer, fans = star_graph
    counts = {}
    for n in (5, 50):
        data, statements = await measured(
            gql, engine, FOLLOWERS, {"u": star.username, "n": n}, viewer.token
        )
        page = data["user"]["followers"]
        assert page["totalCount"] == 61 - len(BLOCKED)  # the viewer's blocked fans: hidden
        assert len(page["edges"]) == n
        nodes = [e["node"] for e in page["edges"]]
        assert nodes[0]["username"] == viewer.username  # the newest follow comes first
        check_users(nodes[1:], fans)
        counts[n] = len(statements)
        print(f"\nfollowers(first: {n}): {len(statements)} SQL statements")
        for s in statements:
            print("   ", s[:110])
    assert counts[5] == counts[50], counts
    assert counts[50] <= MAX_STATEMENTS, counts


BACKWARD = f"""query($u: String!, $n: Int!) {{ user(username: $u) {{
  followers(last: $n) {{ totalCount pageInfo {{ hasPreviousPage hasNextPage }}
    edges {{ node {{ {USER_FIELDS} blockedWithViewer }} }} }} }} }}"""


async def test_backward_follower_page_costs_constant_round_trips(gql, engine, star_graph):
    star, viewer, fans = star_graph
    counts = {}
    for n in (5, 50):
        data, statements = await measured(
            gql, engine, BACKWARD, {"u": star.username, "n": n}, viewer.token
        )
        page = data["user"]["followers"]
        assert len(page["edges"]) == n
        assert page["pageInfo"] == {"hasPreviousPage": True, "hasNextPage": False}
        nodes = [e["node"] for e in page["edges"]]
        # the oldest follows, newest first: the last fans to follow the star, in order
        assert nodes[-1]["username"] == fans[0].username
        check_users(nodes, fans)
        counts[n] = len(statements)
        print(f"\nfollowers(last: {n}): {len(statements)} SQL statements")
    assert counts[5] == counts[50], counts
    assert counts[50] <= MAX_STATEMENTS, counts


async def test_nodes_cost_constant_round_trips(gql, engine, star_graph):
    _, viewer, fans = star_graph
    counts = {}
    for n in (5, 50):
        # Spread the ids over the fans so every kind of flag shows up in the big batch.
        chosen = fans[:n] if n == 50 else [fans[i] for i in (0, 1, 4, 7, 59)]
        data, statements = await measured(
            gql, engine, NODES, {"ids": [f.gid for f in chosen]}, viewer.token
        )
        assert [node["username"] for node in data["nodes"]] == [f.username for f in chosen]
        check_users(data["nodes"], fans)
        counts[n] = len(statements)
        print(f"\nnodes({n} ids): {len(statements)} SQL statements")
    assert counts[5] == counts[50], counts
    assert counts[50] <= MAX_STATEMENTS, counts


#: A notification page reaches further: the page and the unread count; its actors
#: (accounts, blocks, counts); its posts (posts, counts, likes); its comments, the
#: top-level comments that replies answer and their authors (accounts, blocks).
MAX_NOTIFICATION_STATEMENTS = 14

NOTIFICATIONS = """query($n: Int!) { viewer { unreadNotificationCount
  notifications(first: $n) { edges { node { kind count read
    actor { username followerCount blockedWithViewer }
    post { caption likeCount commentCount viewerHasLiked author { username } }
    comment { body author { username } post { caption } } } } } } }"""
COMMENTS = """query($id: ID!, $n: Int!) { node(id: $id) { ... on Post { commentCount
  comments(first: $n) { edges { node { body author { username followerCount }
    replies(first: 3) { edges { node { body author { username } parent { body } } }
                        pageInfo { hasNextPage } } } } } } } }"""


@pytest.fixture(scope="module")
async def busy_post(engine, settings, worker):
    """A post with 30 comments (by 30 fans, one of them blocked by the post's author, the
    viewer), two replies under each (by two other accounts), and the notifications they
    make, all consumed. Built once for the module's tests (about 4 s)."""
    from domain.engagement.add_comment import add_comment
    from domain.posts.create_post import create_post
    from tests.support.users import user_maker

    shards = settings.counter_shards
    new_users = user_maker(engine, settings)
    (viewer,) = await new_users(1, prefix="busy")
    fans = await new_users(30, prefix="bfan")
    repliers = await new_users(2, prefix="brep")
    post = await create_post(engine, viewer.id, caption="busy", counter_shards=shards)
    for i, fan in enumerate(fans):
        top = await add_comment(engine, fan.id, post.id, f"c{i}", counter_shards=shards)
        for j, replier in enumerate(repliers):
            await add_comment(
                engine, replier.id, post.id, f"r{i}.{j}", parent_id=top.id, counter_shards=shards
            )
    assert await block_user(engine, viewer.id, fans[3].id, counter_shards=shards)
    await worker.drain()
    return viewer, post


async def test_notification_page_costs_constant_round_trips(gql, engine, busy_post):
    viewer, _ = busy_post
    counts = {}
    for n in (5, 40):
        data, statements = await measured(gql, engine, NOTIFICATIONS, {"n": n}, viewer.token)
        edges = data["viewer"]["notifications"]["edges"]
        assert len(edges) == n
        assert all(e["node"]["comment"]["post"]["caption"] == "busy" for e in edges)
        counts[n] = len(statements)
        print(f"\nnotifications(first: {n}): {len(statements)} SQL statements")
    assert counts[5] == counts[40], counts
    assert counts[40] <= MAX_NOTIFICATION_STATEMENTS, counts


async def test_comment_page_costs_constant_round_trips(gql, engine, busy_post):
    from schema.ids import to_global_id

    viewer, post = busy_post
    counts = {}
    for n in (5, 30):
        data, statements = await measured(
            gql, engine, COMMENTS, {"id": to_global_id("Post", post.id), "n": n}, viewer.token
        )
        node = data["node"]
        bodies = [e["node"]["body"] for e in node["comments"]["edges"]]
        assert "c3" not in bodies  # the blocked fan's comment (and replies) are hidden
        assert len(bodies) == (n if n < 4 else n - 1)
        counts[n] = len(statements)
        print(f"\ncomments(first: {n}): {len(statements)} SQL statements")
    listed = sum(1 + len(e["node"]["replies"]["edges"]) for e in data["node"]["comments"]["edges"])
    # The whole post on one page: its count is what the viewer can list (replies past
    # the preview of 3 aside: every comment here has at most 3, minus the hidden ones).
    assert data["node"]["commentCount"] == listed
    assert counts[5] == counts[30], counts
    assert counts[30] <= MAX_STATEMENTS, counts


BACKWARD_COMMENTS = """query($id: ID!, $n: Int!) { node(id: $id) { ... on Post {
  comments(last: $n) { edges { node { body author { username followerCount }
    replies(last: 1) { edges { node { body author { username } parent { body } } }
                       pageInfo { hasPreviousPage } } } } } } } }"""


async def test_a_backward_comment_page_costs_constant_round_trips(gql, engine, busy_post):
    """``last`` on the comments and on every comment's replies: the same statements
    whatever the page's size, each comment's last reply among them."""
    from schema.ids import to_global_id

    viewer, post = busy_post
    counts = {}
    for n in (5, 30):
        data, statements = await measured(
            gql,
            engine,
            BACKWARD_COMMENTS,
            {"id": to_global_id("Post", post.id), "n": n},
            viewer.token,
        )
        edges = data["node"]["comments"]["edges"]
        assert len(edges) == (n if n < 27 else n - 1)  # the blocked fan's c3 is hidden
        for e in edges:
            i = e["node"]["body"][1:]
            replies = e["node"]["replies"]
            assert [r["node"]["body"] for r in replies["edges"]] == [f"r{i}.1"]
            assert replies["pageInfo"]["hasPreviousPage"] is True
        counts[n] = len(statements)
    assert counts[5] == counts[30] <= MAX_STATEMENTS, counts


SEARCH_PAGE = f"""query($q: String!, $n: Int!) {{ searchUsers(query: $q, first: $n) {{
  edges {{ score node {{ {USER_FIELDS} blockedWithViewer }} }} pageInfo {{ endCursor }} }} }}"""
SUGGESTED_PAGE = f"""query($n: Int!) {{ viewer {{ suggestedFollows(first: $n) {{
  edges {{ followedByFolloweesCount node {{ {USER_FIELDS} blockedWithViewer }} }} }} }} }}"""


async def test_search_and_suggestion_pages_cost_constant_round_trips(
    gql, engine, settings, make_users
):
    shards = settings.counter_shards
    tag = "qc" + uuid.uuid4().hex[:5]
    viewer, hub = await make_users(2, prefix="qv")
    fans = await make_users(60, prefix=tag)
    assert (await follow_user(engine, viewer.id, hub.id, counter_shards=shards)).created
    for i, fan in enumerate(fans):
        assert (await follow_user(engine, hub.id, fan.id, counter_shards=shards)).created
        if i % 3 == 0:
            assert (await follow_user(engine, fan.id, viewer.id, counter_shards=shards)).created
    for fan in fans[:5]:
        assert (await follow_user(engine, viewer.id, fan.id, counter_shards=shards)).created

    counts: dict[tuple[str, int], int] = {}
    for n in (5, 50):
        data, statements = await measured(
            gql, engine, SEARCH_PAGE, {"q": tag, "n": n}, viewer.token
        )
        edges = data["searchUsers"]["edges"]
        assert len(edges) == n
        assert {e["node"]["followedByViewer"] for e in edges} == {True, False} or n == 5
        counts[("search", n)] = len(statements)
        data, statements = await measured(gql, engine, SUGGESTED_PAGE, {"n": n}, viewer.token)
        edges = data["viewer"]["suggestedFollows"]["edges"]
        assert len(edges) == n
        assert not any(e["node"]["followedByViewer"] for e in edges)
        counts[("suggest", n)] = len(statements)
        print(f"\nsearchUsers / suggestedFollows(first: {n}): {counts}")
    assert counts[("search", 5)] == counts[("search", 50)] <= MAX_STATEMENTS, counts
    assert counts[("suggest", 5)] == counts[("suggest", 50)] <= MAX_STATEMENTS, counts


RELATION_PAGES = f"""query($n: Int!) {{ viewer {{
  blockedUsers(first: $n) {{ edges {{ blockedAt node {{ {USER_FIELDS} blockedWithViewer }} }} }}
  mutedUsers(first: $n) {{ edges {{ mutedAt node {{ {USER_FIELDS} mutedByViewer }} }} }} }} }}"""
REPORT_QUEUE = """query($n: Int!) { moderation { ... on Moderation { reports(first: $n) {
  edges { node { reason note reporter { username followerCount } reportedUser { username }
  post { caption likeCount author { username } } } } } } } }"""


async def test_blocked_muted_and_report_pages_cost_constant_round_trips(
    gql, engine, settings, make_users
):
    """viewer { blockedUsers mutedUsers } and moderation { reports }: one statement per
    page and a constant number of batches for what the nodes show
    (docs/api/mute-and-block.md "Mute and blocked list", "Reports and moderation")."""
    from domain.moderation.moderators import set_moderator
    from domain.posts.create_post import create_post

    viewer, author = await make_users(2, prefix="rel")
    others = await make_users(60, prefix="relo")
    ids = [o.id for o in others]
    posts = [
        (
            await create_post(
                engine, author.id, caption=f"p{i}", counter_shards=settings.counter_shards
            )
        ).id
        for i in range(60)
    ]
    async with engine.begin() as conn:
        await conn.execute(
            text(
                "INSERT INTO blocks (blocker_id, blocked_id)"
                " SELECT :v, unnest(CAST(:ids AS uuid[]))"
            ),
            {"v": viewer.id, "ids": ids},
        )
        await conn.execute(
            text("INSERT INTO mutes (muter_id, muted_id) SELECT :v, unnest(CAST(:ids AS uuid[]))"),
            {"v": viewer.id, "ids": ids},
        )
        await conn.execute(
            text(
                "INSERT INTO reports (id, reporter_id, subject, user_id, post_id, reason)"
                " SELECT gen_random_uuid(), r, 'post', :a, p, 'spam'"
                " FROM unnest(CAST(:rs AS uuid[]), CAST(:ps AS uuid[])) AS x(r, p)"
            ),
            {"a": author.id, "rs": ids, "ps": posts},
        )
    assert await set_moderator(engine, viewer.username, True)
    counts: dict[tuple[str, int], int] = {}
    for n in (5, 50):
        data, statements = await measured(gql, engine, RELATION_PAGES, {"n": n}, viewer.token)
        assert len(data["viewer"]["blockedUsers"]["edges"]) == n
        assert all(e["node"]["mutedByViewer"] for e in data["viewer"]["mutedUsers"]["edges"])
        counts[("lists", n)] = len(statements)
        data, statements = await measured(gql, engine, REPORT_QUEUE, {"n": n}, viewer.token)
        assert len(data["moderation"]["reports"]["edges"]) == n
        counts[("reports", n)] = len(statements)
        print(f"\nblockedUsers + mutedUsers / reports(first: {n}): {counts}")
    assert counts[("lists", 5)] == counts[("lists", 50)] <= MAX_STATEMENTS, counts
    assert counts[("reports", 5)] == counts[("reports", 50)] <= MAX_STATEMENTS, counts
