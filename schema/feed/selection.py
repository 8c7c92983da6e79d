"""What a home feed page's selection asks for, so one statement loads it with the page."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from graphql import FieldNode, FragmentSpreadNode, InlineFragmentNode, SelectionSetNode
from strawberry.types.nodes import SelectedField, Selection

from domain.feed.hydration import Wanted
from schema.context import Info

#: The fields of a feed edge's node whose facts a hydration can load up front.
_AUTHOR_COUNTS = frozenset({"followerCount", "followingCount", "postCount"})
_POST_COUNTS = frozenset({"likeCount", "commentCount"})


def wanted(info: Info) -> Wanted:
    """What the selection under ``edges { node { … } }`` asks beyond posts and authors
    (fragments included): the authors' counts, the posts' counts, the viewer's likes."""
    node: set[str] = set()
    author: set[str] = set()

    def walk(selections: Iterable[Selection], path: tuple[str, ...]) -> None:
        for sel in selections:
            if not isinstance(sel, SelectedField):  # a fragment, spread or inline
                walk(sel.selections, path)
                continue
            name = sel.name
            if path == ("edges", "node"):
                node.add(name)
            elif path == ("edges", "node", "author"):
                author.add(name)
            if len(path) < 3:
                walk(sel.selections, (*path, name))

    for field in info.selected_fields:
        walk(field.selections, ())
    return Wanted(
        user_counts=bool(author & _AUTHOR_COUNTS),
        post_counts=bool(node & _POST_COUNTS),
        viewer_liked="viewerHasLiked" in node,
    )


def _subfields(info: Info) -> Iterator[FieldNode]:
    """The subfields the field being resolved selects (through fragments too), read from
    the document's nodes, without building Strawberry's selections."""
    raw = info._raw_info
    fragments = raw.fragments
    seen: set[str] = set()

    def walk(selection_set: SelectionSetNode | None) -> Iterator[FieldNode]:
        for sel in selection_set.selections if selection_set else ():
            if isinstance(sel, FieldNode):
                yield sel
            elif isinstance(sel, InlineFragmentNode):
                yield from walk(sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode) and sel.name.value not in seen:
                seen.add(sel.name.value)
                fragment = fragments.get(sel.name.value)
                if fragment is not None:
                    yield from walk(fragment.selection_set)

    for node in raw.field_nodes:
        yield from walk(node.selection_set)


def subfield_names(info: Info) -> set[str]:
    """The names of the subfields the field being resolved selects."""
    return {f.name.value for f in _subfields(info)}
