"""The keyset lists that tests page through: a document per list (its arguments and
selection left as ``%s`` ``%s``) and the key of the variable naming its owner."""

from __future__ import annotations

LISTS = {
    "posts": ("query($u: String!, $a: String) { user(username: $u) { posts(%s) %s } }", "u"),
    "other posts": ("query($u: String!, $a: String) { user(username: $u) { posts(%s) %s } }", "w"),
    "followers": (
        "query($u: String!, $a: String) { user(username: $u) { followers(%s) %s } }",
        "u",
    ),
    "following": (
        "query($u: String!, $a: String) { user(username: $u) { following(%s) %s } }",
        "f",
    ),
    "notifications": ("query($a: String) { viewer { notifications(%s) %s } }", None),
    "feed": ("query($a: String) { viewer { feed(%s) %s } }", None),
    "likes": ("query($p: ID!, $a: String) { node(id: $p) { ... on Post { likes(%s) %s } } }", "p"),
    "comments": (
        "query($p: ID!, $a: String) { node(id: $p) { ... on Post { comments(%s) %s } } }",
        "p",
    ),
    "hashtag": ("query($t: String!, $a: String) { hashtag(name: $t) { posts(%s) %s } }", "t"),
}


def connection(data: dict) -> dict:
    """The one connection inside a response's data."""
    node = data
    while "edges" not in node:
        (node,) = [v for v in node.values() if isinstance(v, dict)]
    return node
