"""tools/prose_stats.py counts what it says: code, docstring and comment lines, and the
docstrings longer than the code they document."""

from __future__ import annotations

from tools.prose_stats import measure

SOURCE = '''"""A module docstring
on two lines."""

# A comment line.
X = 1  # an inline comment: a code line


def short(a: int) -> int:
    """Return a.

    A docstring of four lines over a body of one.
    """
    return a


class Big:
    """One line."""

    def method(self) -> int:
        value = 2
        return value
'''


def test_lines_are_counted_by_kind() -> None:
    prose = measure(SOURCE)
    assert (prose.code, prose.docstrings, prose.comments) == (7, 7, 1)
    assert prose.long_docstrings == 1  # short's, not Big's (one line over three)
    assert round(prose.ratio, 2) == round(8 / 7, 2)
