"""The local store's folders (quarantine, delivery, meta, tombstones, tmp: one file
system, so renames are atomic) and their file operations; all blocking."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from pathlib import Path

#: Bytes copied or buffered at a time.
CHUNK_BYTES = 1 << 20


class Folders:
    """The folders of a local store rooted at ``root`` (made if missing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.quarantine = root / "quarantine"
        self.delivery = root / "delivery"
        self.meta = root / "meta"
        self.tombstones = root / "tombstones"
        self.tmp = root / "tmp"
        for folder in (self.quarantine, self.delivery, self.meta, self.tombstones, self.tmp):
            folder.mkdir(parents=True, exist_ok=True)

    def tmp_path(self) -> Path:
        """A fresh name for a partial file."""
        return self.tmp / f"{uuid.uuid4().hex}.part"

    def tombstone(self, key: str, expires: int) -> Path:
        """``key``'s tombstone in the folder of ``expires``' hour (Unix s)."""
        return self.tombstones / str(expires // 3600) / key

    def read_meta(self, key: str) -> dict[str, object]:
        """The facts kept beside ``key`` (empty when there are none)."""
        try:
            data = json.loads((self.meta / key).read_bytes())
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def write_meta(self, key: str, meta: dict[str, object]) -> None:
        """Keep ``meta`` beside ``key`` (atomically)."""
        path = self.meta / key
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.tmp_path()
        tmp.write_bytes(json.dumps(meta).encode())
        os.replace(tmp, path)

    def sweep_tombstones(self, now: float) -> None:
        """Remove the tombstone folders of hours that have passed."""
        current_hour = int(now) // 3600
        for hour in os.listdir(self.tombstones):
            if hour.isdigit() and int(hour) < current_hour:
                shutil.rmtree(self.tombstones / hour, ignore_errors=True)


def copy_at_most(source: Path, dest: Path, max_bytes: int) -> int:
    """Copy ``source`` to ``dest``; its size. ValueError over ``max_bytes`` (nothing
    written), FileNotFoundError."""
    with source.open("rb") as src:
        size = os.fstat(src.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"the object is {size} bytes, over the limit of {max_bytes}")
        with dest.open("wb") as out:
            shutil.copyfileobj(src, out, CHUNK_BYTES)
    return size


def remove_empty_parents(folder: Path, base: Path) -> None:
    """Remove ``folder`` and its parents below ``base`` while they are empty."""
    while folder != base and base in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or gone)
            return
        folder = folder.parent
