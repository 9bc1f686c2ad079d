"""The stdio side: newline-delimited JSON-RPC on fd 0 and fd 1.

fd 0 is read in raw chunks when the loop says it is readable (a pipe, a file, /dev/null: no line
length limit); each line is decoded as UTF-8 by us. Every message written is one compact JSON
line, written whole. fd 1 is claimed for the protocol at start and pointed at stderr, so a stray
print from any library can never corrupt the stream.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

CHUNK = 1 << 16
UTF8_BOM = b"\xef\xbb\xbf"

Line = dict[str, object] | list[object] | Exception  # a parsed message, a batch, or why a line was not one


def error(id_: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def encode(message: Any) -> bytes:
    """One message as compact UTF-8 JSON. A lone surrogate (a client may send ``"\\ud800"``, which
    JSON allows and UTF-8 cannot carry) is written as the same escape it came in as."""
    # check_circular=False: a message is parsed JSON or built here, never a cycle (the check is a
    # sixth of the encoding of a large tools/list)
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), check_circular=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(message, separators=(",", ":"), check_circular=False).encode("ascii")


class Writer:
    def __init__(self, fd: int):
        self._fd = fd
        self.broken = False

    def send(self, message: dict[str, Any], raw: bytes | None = None) -> bool:
        """Write one message (``raw``: its bytes, already encoded on one line); False once the
        client has gone (stdout closed)."""
        if self.broken:
            return False
        view = memoryview((encode(message) if raw is None else raw) + b"\n")
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:  # BrokenPipeError and the like: the client stopped reading
            self.broken = True
            return False
        return True


def claim_stdout() -> Writer:
    """A private copy of fd 1 for the protocol; fd 1 itself then goes to stderr."""
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return Writer(protocol)


class Reader:
    """Lines of fd 0, parsed, handed to ``deliver`` as they complete; ``ended`` after end of input."""

    def __init__(self, deliver: Callable[[Line, bytes | None], None], fd: int = 0):
        self.fd = fd
        self.deliver = deliver
        self.ended = False
        self._pending: list[bytes] = []

    def readable(self) -> None:
        try:
            chunk = os.read(self.fd, CHUNK)
        except OSError:
            chunk = b""
        if not chunk:
            self.ended = True
            rest = b"".join(self._pending).rstrip(b"\r")
            self._pending = []
            if rest.strip():
                self._line(rest)
            return
        if b"\n" not in chunk:
            self._pending.append(chunk)  # a long line arriving piece by piece: joined once, at its end
            return
        lines = chunk.split(b"\n")
        if self._pending:
            lines[0] = b"".join(self._pending) + lines[0]
        self._pending = [lines.pop()] if lines[-1] else []
        for line in lines:
            line = line.rstrip(b"\r")
            if line.strip():
                self._line(line)

    def _line(self, line: bytes) -> None:
        """One line, parsed; a message is handed on with the client's own bytes (valid UTF-8
        JSON, as parsed) so that a request goes on to the provider as the client wrote it."""
        value = _parse(line)
        self.deliver(value, line if isinstance(value, dict) and not line.startswith(UTF8_BOM) else None)


def _parse(line: bytes) -> Line:
    try:
        value = json.loads(line.decode("utf-8").lstrip("\ufeff"))
    except (UnicodeDecodeError, ValueError) as error:
        return error
    if isinstance(value, (dict, list)):
        return value
    return ValueError("not a JSON-RPC message")
