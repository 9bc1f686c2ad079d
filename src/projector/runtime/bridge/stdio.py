"""The stdio side: newline-delimited JSON-RPC on fd 0 and fd 1.

Bytes are read from the raw fd in a thread (no 64 KiB line limit, works with a pipe, a file or
/dev/null, never blocks shutdown); each line is decoded as UTF-8 by us. Every message written is
one compact JSON line, written whole under a lock. fd 1 is claimed for the protocol at start and
pointed at stderr, so a stray print from any library can never corrupt the stream.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

CHUNK = 1 << 16


class Writer:
    def __init__(self, fd: int):
        self._fd = fd
        self._lock = threading.Lock()
        self.broken = False

    def send(self, message: dict[str, Any]) -> bool:
        """Write one message; False once the client has gone (stdout closed)."""
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        with self._lock:
            if self.broken:
                return False
            view = memoryview(data)
            try:
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except (BrokenPipeError, OSError):
                self.broken = True
                return False
        return True


def claim_stdout() -> Writer:
    """A private copy of fd 1 for the protocol; fd 1 itself then goes to stderr."""
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Writer(protocol)


Line = dict[str, Any] | list[Any] | Exception  # a parsed message, a batch, or why a line was not one


def read_lines(fd: int, deliver: Callable[[Line | None], None]) -> threading.Thread:
    """Start a thread that delivers each line of ``fd`` parsed, then None at end of input."""

    def loop() -> None:
        buffer = bytearray()
        while True:
            try:
                chunk = os.read(fd, CHUNK)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buffer += chunk
            while (end := buffer.find(b"\n")) >= 0:
                line = bytes(buffer[:end]).rstrip(b"\r")
                del buffer[: end + 1]
                if line.strip():
                    deliver(_parse(line))
        if buffer.strip():
            deliver(_parse(bytes(buffer).rstrip(b"\r")))
        deliver(None)

    thread = threading.Thread(target=loop, name="stdin", daemon=True)
    thread.start()
    return thread


def _parse(line: bytes) -> Line:
    try:
        value = json.loads(line.decode("utf-8").lstrip("\ufeff"))
    except (UnicodeDecodeError, ValueError) as error:
        return error
    if isinstance(value, (dict, list)):
        return value
    return ValueError("not a JSON-RPC message")
