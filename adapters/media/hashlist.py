"""``domain.media.ports.KnownBadMedia`` as a local hash list (``MEDIA_HASHLIST_PATH``),
standing in for the PhotoDNA call of docs/seeds/chroma-architecture.md "Media pipeline".
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import numpy.typing as npt

_SHA256 = re.compile(r"[0-9a-f]{64}")
_PHASH = re.compile(r"[0-9a-f]{16}")


class HashListError(ValueError):
    """A line of the hash list is not ``sha256:<64 hex>`` nor ``phash:<16 hex>``."""


class HashList:
    """Known-bad SHA-256s and pHashes; a pHash matches within ``max_distance`` bits."""

    def __init__(self, sha256: Iterable[str], phash: Iterable[str], *, max_distance: int) -> None:
        if not 0 <= max_distance <= 64:
            raise ValueError("max_distance is a number of bits, 0 to 64")
        self._sha256 = frozenset(s.lower() for s in sha256)
        self._phash: npt.NDArray[np.uint64] = np.array([int(p, 16) for p in phash], dtype=np.uint64)
        self.max_distance = max_distance

    @classmethod
    def from_file(cls, path: Path | None, *, max_distance: int) -> HashList:
        """The list at ``path`` (None: empty); raises HashListError or OSError."""
        sha256: list[str] = []
        phash: list[str] = []
        if path is not None:
            with path.open(encoding="utf-8") as f:
                for number, raw in enumerate(f, start=1):
                    line = raw.split("#", 1)[0].strip().lower()
                    if not line:
                        continue
                    kind, _, value = line.partition(":")
                    value = value.strip()
                    if kind == "sha256" and _SHA256.fullmatch(value):
                        sha256.append(value)
                    elif kind == "phash" and _PHASH.fullmatch(value):
                        phash.append(value)
                    else:
                        raise HashListError(
                            f"{path}:{number}: expected sha256:<64 hex> or phash:<16 hex>"
                        )
        return cls(sha256, phash, max_distance=max_distance)

    def __len__(self) -> int:
        return len(self._sha256) + len(self._phash)

    def matches_now(self, *, sha256: str, phash: str) -> bool:
        """Whether ``sha256`` (hex) is listed or ``phash`` (16 hex; empty: none) is within
        ``max_distance`` of a listed pHash."""
        if sha256.lower() in self._sha256:
            return True
        if not phash or self._phash.size == 0:
            return False
        distances = np.bitwise_count(self._phash ^ np.uint64(int(phash, 16)))
        return bool(distances.min() <= self.max_distance)

    async def matches(self, *, sha256: str, phash: str) -> bool:
        """:meth:`matches_now` (microseconds: fine on the event loop)."""
        return self.matches_now(sha256=sha256, phash=phash)
