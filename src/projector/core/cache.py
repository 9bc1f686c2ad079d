"""Work worth keeping between runs (a checked model, checked descriptors), as plain JSON beside
projector's state, valid while the files it came from are unchanged.

"Unchanged" is decided by each file's inode, ctime, mtime and size, taken *before* the file is
read: an edit that keeps the size and puts the mtime back (``sed`` + ``touch -r``) still moves
the ctime, which no user-level call can set, and an edit made while the work runs makes the
stored key stale instead of the stored result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any


def stat_key(paths: Iterable[str | os.PathLike[str]]) -> list[Any]:
    key: list[Any] = []
    for path in paths:
        try:
            info = os.stat(path)
            key.append([str(path), info.st_ino, info.st_ctime_ns, info.st_mtime_ns, info.st_size])
        except OSError:
            key.append([str(path), None])
    return key


def kept(cache: Path, key: list[Any], compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it returned before for the same ``key`` (JSON-able values only).
    A cache that cannot be read or written costs time, never correctness."""
    try:
        with open(cache, encoding="utf-8") as handle:
            entry = json.load(handle)
        if entry.get("key") == key:
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    data = compute()
    try:
        from projector.core import files

        files.write_text(cache, json.dumps({"key": key, "data": data}))
    except (OSError, TypeError, ValueError):
        pass
    return data
