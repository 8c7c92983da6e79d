"""Prose per package: docstring and comment lines per code line, docstrings longer than
the body they document, README lines.

``python -m tools.prose_stats [ROOT]`` prints one row per package of ROOT (default: this
checkout). Code lines hold a token outside docstrings and comments; comment lines hold
only a comment; a docstring is longer than its body when it has more lines than the
code lines of the function or class it opens."""

from __future__ import annotations

import ast
import io
import sys
import tokenize
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("app", "domain", "adapters", "schema", "resolvers", "workers", "tools")
SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
Scope = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Prose:
    files: int = 0
    code: int = 0
    docstrings: int = 0
    comments: int = 0
    long_docstrings: int = 0

    def add(self, other: Prose) -> None:
        for field in ("files", "code", "docstrings", "comments", "long_docstrings"):
            setattr(self, field, getattr(self, field) + getattr(other, field))

    @property
    def ratio(self) -> float:
        return (self.docstrings + self.comments) / self.code if self.code else 0.0


def docstring_lines(tree: ast.Module) -> dict[Scope, set[int]]:
    """The lines of each scope's docstring, by the scope that opens with it."""
    found: dict[Scope, set[int]] = {}
    for node in ast.walk(tree):
        if isinstance(node, Scope) and ast.get_docstring(node, clean=False) is not None:
            doc = node.body[0]
            found[node] = set(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
    return found


def measure(source: str) -> Prose:
    """The prose figures of one module's source."""
    tree = ast.parse(source)
    docs = docstring_lines(tree)
    in_docs = set().union(*docs.values()) if docs else set()
    code: set[int] = set()
    comments: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        lines = range(tok.start[0], tok.end[0] + 1)
        if tok.type == tokenize.COMMENT:
            comments.add(tok.start[0])
        elif tok.type not in SKIP and tok.type != tokenize.ENDMARKER:
            code.update(line for line in lines if line not in in_docs)
    long = sum(
        1
        for node, doc in docs.items()
        if not isinstance(node, ast.Module)
        and len(doc) > len({n for n in code if max(doc) < n <= (node.end_lineno or 0)})
    )
    return Prose(1, len(code), len(in_docs), len(comments - code), long)


def package(root: Path, name: str) -> Prose:
    total = Prose()
    for path in sorted((root / name).rglob("*.py")):
        total.add(measure(path.read_text(encoding="utf-8")))
    return total


def main(argv: list[str]) -> None:
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    print("package    files   code    doc comment  ratio  long")
    total = Prose()
    for name in PACKAGES:
        if not (root / name).is_dir():
            continue
        p = package(root, name)
        total.add(p)
        print(
            f"{name:<10} {p.files:>5} {p.code:>6} {p.docstrings:>6} {p.comments:>7}"
            f" {p.ratio:>6.2f} {p.long_docstrings:>5}"
        )
    print(
        f"{'all':<10} {total.files:>5} {total.code:>6} {total.docstrings:>6}"
        f" {total.comments:>7} {total.ratio:>6.2f} {total.long_docstrings:>5}"
    )
    readme = root / "README.md"
    print(f"README.md lines: {len(readme.read_text(encoding='utf-8').splitlines())}")


if __name__ == "__main__":
    main(sys.argv[1:])
