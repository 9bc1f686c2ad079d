"""SHA-256 from the interpreter's own module (what hashlib falls back to when OpenSSL lacks it),
not hashlib: that loads OpenSSL, a third of a Python start-up, on every sync and bridge start."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_found: list[Callable[[bytes], Any]] = []  # the constructor, once looked up


def sha256(data: bytes) -> str:
    """The hex digest of ``data``."""
    return _constructor()(data).hexdigest()


def _constructor() -> Callable[[bytes], Any]:
    """Looked up once: a failed import is not cached, and on 3.11 the first try searches the
    whole of sys.path again on every call (a hundred calls per sync)."""
    if not _found:
        try:
            from _sha2 import sha256  # Python 3.12 and later
        except ImportError:
            try:
                from _sha256 import sha256  # Python 3.11
            except ImportError:
                from hashlib import sha256
        _found.append(sha256)
    return _found[0]
