"""projector's SHA-256 (the interpreter's own module) is hashlib's."""

import hashlib

from projector.core.digest import sha256


def test_the_digest_is_hashlib_s():
    for data in (b"", b"abc", "ünïcödé".encode() * 1000, bytes(range(256))):
        assert sha256(data) == hashlib.sha256(data).hexdigest()
