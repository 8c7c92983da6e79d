"""Read a SNAP edge list into memory: the edges as int64 arrays, the rest counted."""

from __future__ import annotations

import gzip
from array import array
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from domain.progress import Progress, no_progress

#: Largest node id accepted (staged as bigint); larger ids are malformed lines.
MAX_NODE_ID = 2**63 - 1
#: How many malformed lines the report quotes.
MALFORMED_EXAMPLES = 5

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


@dataclass
class _Parsed:
    """An edge list in memory: parallel arrays of the non-self-loop edges."""

    src: array[int] = field(default_factory=lambda: array("q"))  # follower node ids
    dst: array[int] = field(default_factory=lambda: array("q"))  # followee node ids
    pos: array[int] = field(default_factory=lambda: array("q"))  # 1-based index among edge lines
    nodes: set[int] = field(default_factory=set)
    edge_lines: int = 0
    self_loops: int = 0
    malformed: int = 0
    comments: int = 0
    blanks: int = 0
    examples: list[tuple[int, str]] = field(default_factory=list)


#: Lines read between two progress reports.
PROGRESS_LINES = 65_536


def _parse(path: Path, progress: Progress = no_progress) -> _Parsed:
    """Read a SNAP edge list (gzip detected by its magic bytes, else plain text);
    report the bytes of the file read so far to ``progress`` (step "read file").

    Raises OSError (missing or unreadable file, truncated or corrupt gzip) and EOFError.
    """
    with path.open("rb") as probe:
        gz = probe.read(2) == _GZIP_MAGIC
    with path.open("rb") as raw_file:
        return _read(raw_file, gz, path.stat().st_size, progress)


def _read(raw_file: BinaryIO, gz: bool, size: int, progress: Progress) -> _Parsed:
    out = _Parsed()
    src_append, dst_append, pos_append = out.src.append, out.dst.append, out.pos.append
    add_node = out.nodes.add
    edge_lines = self_loops = 0
    progress("read file", 0, size, "bytes")
    with gzip.GzipFile(fileobj=raw_file, mode="rb") if gz else nullcontext(raw_file) as f:
        for line_no, raw in enumerate(f, 1):
            if line_no % PROGRESS_LINES == 0:
                progress("read file", raw_file.tell(), size, "bytes")
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM) :]
            fields = raw.split()
            if not fields:
                out.blanks += 1
                continue
            a, *rest = fields
            if a[:1] == b"#":
                out.comments += 1
                continue
            if len(rest) != 1 or not a.isdigit() or not rest[0].isdigit():
                _malformed(out, line_no, raw)
                continue
            follower, followee = int(a), int(rest[0])
            if follower > MAX_NODE_ID or followee > MAX_NODE_ID:
                _malformed(out, line_no, raw)
                continue
            edge_lines += 1
            add_node(follower)
            add_node(followee)
            if follower == followee:
                self_loops += 1
                continue
            src_append(follower)
            dst_append(followee)
            pos_append(edge_lines)
    progress("read file", size, size, "bytes")
    out.edge_lines, out.self_loops = edge_lines, self_loops
    return out


def _malformed(out: _Parsed, line_no: int, raw: bytes) -> None:
    out.malformed += 1
    if len(out.examples) < MALFORMED_EXAMPLES:
        out.examples.append((line_no, raw[:80].decode("utf-8", "replace").rstrip("\r\n")))
