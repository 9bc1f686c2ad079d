"""SHA-256 from the interpreter's own module (what hashlib falls back to when OpenSSL lacks it),
not hashlib: that loads OpenSSL, a third of a Python start-up, on every sync and bridge start."""

from __future__ import annotations

from typing import Any


def sha256(data: bytes) -> str:
    """The hex digest of ``data``."""
    return _constructor()(data).hexdigest()


def _constructor() -> Any:
    try:
        from _sha2 import sha256  # Python 3.12 and later
    except ImportError:
        try:
            from _sha256 import sha256  # Python 3.11
        except ImportError:
            from hashlib import sha256
    return sha256
