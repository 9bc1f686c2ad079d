"""Work worth keeping between runs (a checked model, checked descriptors), as plain JSON beside
projector's state, valid while the files it came from are unchanged.

"Unchanged" is decided by each file's inode, ctime, mtime and size, taken *before* the file is
read: an edit that keeps the size and puts the mtime back (``sed`` + ``touch -r``) still moves
the ctime, which no user-level call can set, and an edit made while the work runs makes the
stored key stale instead of the stored result. Where the stat differs but the bytes do not (a
file rewritten as it was), the bytes, kept beside the result, save the work.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
TYPE_CHECKING = False
if TYPE_CHECKING:
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


def kept(cache: Path, key: list[Any], compute: Callable[[], Any], contents: Sequence[str | os.PathLike[str]] = ()) -> Any:
    """``compute()``, or what it returned before for the same ``key`` (JSON-able values only).
    ``contents``: files whose stat is in ``key`` and whose bytes may stand in for it: rewritten
    with the same bytes (a checkout, a dotfile manager, ``touch``), the result still holds.
    A cache that cannot be read or written costs time, never correctness."""
    try:
        with open(cache, encoding="utf-8") as handle:
            entry = json.load(handle)
        if entry.get("key") == key:
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        entry = None
    texts = _texts(contents) if contents else None  # compared whole: no hash to import
    if (texts is not None and isinstance(entry, dict) and entry.get("contents") == texts
            and _without(entry.get("key"), contents) == _without(key, contents) and "data" in entry):
        _store(cache, {"key": key, "contents": texts, "data": entry["data"]})
        return entry["data"]
    data = compute()
    if texts is not None and [k for k in key if k not in _without(key, contents)] != stat_key(contents):
        texts = None  # a file changed while it was read: what compute() saw may differ from these bytes
    _store(cache, {"key": key, "contents": texts, "data": data})
    return data


def _without(key: Any, files: Sequence[str | os.PathLike[str]]) -> Any:
    """``key`` without the stat entries of ``files``."""
    names = {str(f) for f in files}
    return [k for k in key if not (isinstance(k, list) and k[:1] and k[0] in names)] if isinstance(key, list) else key


def _texts(files: Sequence[str | os.PathLike[str]]) -> list[str] | None:
    """The files' bytes themselves, as JSON can hold them: a model is small, and comparing bytes
    needs no hash (hashlib would cost a bridge start more than the comparison)."""
    try:
        texts = []
        for path in files:
            with open(path, "rb") as handle:
                texts.append(handle.read().decode("utf-8", "surrogateescape"))
    except OSError:
        return None
    return texts


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
