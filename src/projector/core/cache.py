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


def kept_while(cache: Path, version: Any, still: Callable[[Any], bool], compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it returned before (for this ``version``) while ``still(that)``:
    for work whose result names what it depended on (a model's layers, found by reading them)."""
    try:
        with open(cache, encoding="utf-8") as handle:
            entry = json.load(handle)
        if entry.get("version") == version and still(entry["data"]):
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    data = compute()
    store(cache, version, data)
    return json.loads(json.dumps(data))  # as a later run reads it back: lists, not tuples


def store(cache: Path, version: Any, data: Any) -> None:
    try:
        from projector.core import files

        files.write_text(cache, json.dumps({"version": version, "data": data}))
    except (OSError, TypeError, ValueError):
        pass

