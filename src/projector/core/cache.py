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

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
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
    ``contents``: the files whose ``stat_key`` ends ``key``; their bytes may stand in for it:
    the same bytes again (rewritten by a checkout or a dotfile manager, touched, or copied to
    another place), the same result. A cache that cannot be read or written costs time, never
    correctness."""
    try:
        with open(cache, encoding="utf-8") as handle:
            entry = json.load(handle)
        if entry.get("key") == key:
            return entry["data"]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        entry = None
    texts = _texts(contents) if contents else None  # compared whole: no hash to import
    stats = len(contents)
    if (texts is not None and isinstance(entry, dict) and entry.get("contents") == texts
            and isinstance(entry.get("key"), list) and entry["key"][:-stats] == key[:-stats] and "data" in entry):
        _store(cache, {"key": key, "contents": texts, "data": entry["data"]})
        return entry["data"]
    data = compute()
    if texts is not None and key[-stats:] != stat_key(contents):
        texts = None  # a file changed while it was read: what compute() saw may differ from these bytes
    _store(cache, {"key": key, "contents": texts, "data": data})
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
