"""Work worth keeping between runs (a checked model, compiled descriptors), as plain JSON beside
projector's state, valid while what it came from is the same.

"The same" is decided by content: the key holds the text the work was done on (and whatever
else it depends on), compared whole. A file rewritten with the same bytes (a checkout, an
editor's save) keeps its result; a file's stat could not tell that, and a hash would cost an
import. The text is read once and the work is done on that text, so an edit made meanwhile
makes the stored key stale, never the stored result.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


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
    try:
        from projector.core import files

        files.write_text(cache, json.dumps({"key": key, "data": data}))
    except (OSError, TypeError, ValueError):
        pass
    return data
