"""What one load read, wrote and skipped."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class LoadReport:
    """What one :func:`load_graph` run read, wrote and skipped.

    Every edge line ends in exactly one bucket::

        edge_lines == self_loops_skipped + duplicate_edges_skipped + follows_inserted
                      + follows_already_present + follows_refused_inactive
                      + follows_refused_blocked

    Malformed, comment and blank lines are not edge lines. Times are wall-clock seconds.
    """

    path: str
    users_seen: int  # distinct node ids on edge lines (self-loops included)
    users_inserted: int  # new ``sd<N>`` rows; the others already existed and kept their id
    edge_lines: int  # well-formed ``from<TAB>to`` lines
    self_loops_skipped: int  # edge lines with from == to (Roost forbids self-follows)
    duplicate_edges_skipped: int  # repeats of an earlier edge line of the same file
    follows_inserted: int  # new live follows, counted into the counters
    follows_already_present: int  # the pair was already a live follow: left untouched
    follows_refused_inactive: int  # a side is an existing banned or deleted user
    follows_refused_blocked: int  # a block exists between the two users (either way)
    malformed_lines: int  # neither comment, blank nor two non-negative integers
    comment_lines: int
    blank_lines: int
    parse_seconds: float
    seconds: float  # the whole run: parse, database writes, commit and ANALYZE
    malformed_examples: tuple[tuple[int, str], ...] = field(default=())  # (line number, text)

    @property
    def users_already_present(self) -> int:
        """Users of the file that existed before this run (``users_seen - users_inserted``)."""
        return self.users_seen - self.users_inserted

    def summary(self) -> str:
        """Return a human, multi-line account of the run (what was loaded, skipped, time)."""
        db_seconds = self.seconds - self.parse_seconds
        lines = [
            f"Loaded {self.path} in {self.seconds:.1f} s "
            f"(parse {self.parse_seconds:.1f} s, database {db_seconds:.1f} s)",
            f"  lines:   {self.edge_lines:,} edges, {self.comment_lines:,} comments, "
            f"{self.blank_lines:,} blank, {self.malformed_lines:,} malformed",
            f"  users:   {self.users_seen:,} in the file: {self.users_inserted:,} new, "
            f"{self.users_already_present:,} already present",
            f"  follows: {self.follows_inserted:,} new, "
            f"{self.follows_already_present:,} already present",
            f"  skipped: {self.self_loops_skipped:,} self-loops, "
            f"{self.duplicate_edges_skipped:,} duplicate edges, "
            f"{self.malformed_lines:,} malformed lines, "
            f"{self.follows_refused_inactive:,} with a banned/deleted user, "
            f"{self.follows_refused_blocked:,} across a block",
        ]
        for line_no, content in self.malformed_examples:
            lines.append(f"  malformed line {line_no}: {content!r}")
        if self.malformed_lines > len(self.malformed_examples):
            lines.append(f"  ... and {self.malformed_lines - len(self.malformed_examples):,} more")
        return "\n".join(lines)
