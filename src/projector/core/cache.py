"""Work worth keeping between runs (a checked model, compiled descriptors), as plain JSON beside
projector's state.

Two ways to tell it still holds: ``kept`` compares a key that holds what the work was done on
(the descriptors' bytes), ``kept_while`` asks the stored result whether what it names is
unchanged (a model's layers: each file's ``stat_key`` taken *before* it was read, and its
bytes). An edit that keeps the size and puts the mtime back (``sed`` + ``touch -r``) still
moves the ctime, which no user-level call can set; an edit made while the work runs makes the
stored key stale instead of the stored result.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any


def stat_key(path: str) -> list[int] | None:
    """What an edit cannot keep: inode, ctime, mtime and size (None: no such file). While it is
    the same, the bytes are; when it moved (a checkout rewriting the file), compare the bytes."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_ino, info.st_ctime_ns, info.st_mtime_ns, info.st_size]


def kept(cache: Path, key: list[Any], compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it returned before for the same ``key`` (JSON-able values only:
    lists, not tuples, as JSON gives them back). A cache that cannot be read or written costs
    time, never correctness."""
    try:
        with open(cache, encoding="utf-8") as handle:
            entry = json.load(handle)
        if entry.get("key") == key:
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    data = compute()
    _store(cache, {"key": key, "data": data})
    return data


def kept_while(cache: Path, version: Any, still: Callable[[Any], bool], compute: Callable[[], Any]) -> Any:
    """``compute()``, or what it returned before (for this ``version``) while ``still(that)``:
    for work whose result names what it depended on (a model's layers, found by reading them,
    each with its stat taken before it was read and its bytes)."""
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
    """Keep ``data`` for ``kept_while`` (a cache that cannot be written costs time, never correctness)."""
    _store(cache, {"version": version, "data": data})


def _store(cache: Path, entry: dict[str, Any]) -> None:
    """Replace the cache file whole (a reader sees the old entry or the new one)."""
    temporary = cache.with_name(f".{cache.name}.{os.getpid()}")
    try:
        text = json.dumps(entry)
        cache.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, cache)
    except (OSError, TypeError, ValueError):
        try:
            temporary.unlink()
        except OSError:
            pass
