"""A provider's response as ``http.client`` reads it, without the ``email`` package and
without a system call the bridge does not need.

``http.client`` parses a response's header block with ``email.parser`` into an
``email.message.Message``, and every lookup goes through the email policy's header handling:
for the five fields of a typical MCP answer that is about 21 µs, a fifth of everything the
bridge does for a proxied call. ``Response`` is ``http.client``'s own response class (its status
line, its body reading, its keep-alive decision) whose ``begin`` reads the fields into a small
``Fields`` instead. The connection sets it as its ``response_class``.

``Reader`` is the socket as the response reads it: first the bytes the connection read ahead
(it waits for a whole head in the loop, without blocking), then the socket. On plain TCP the
connection's socket blocks, its every send and receive limited by the kernel (``SO_SNDTIMEO``,
``SO_RCVTIMEO``): CPython's own timeouts poll() before each call, and switching a socket between
them and non-blocking reads costs an ioctl each way. The body is read with ``MSG_DONTWAIT``,
which never waits. A TLS socket takes no flags: it keeps CPython's timeout, switched to
non-blocking for the body (``settimeout(0)``) and back for the next request.

``begin`` does what ``http.client``'s does (the same text in 3.11, 3.12 and 3.13) except how the
fields are read: the same limits (a line of at most 65,536 bytes, at most 100 lines with the
blank one), names
matched without regard to case, an obsolete folded line joined to its field with a space
(RFC 9112 section 5.2), and values without surrounding whitespace (RFC 9110 section 5.5; the
email package keeps trailing whitespace). A line that is not a field (no colon, whitespace
before the colon) is skipped; the email package stops reading fields at it.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

import io
import socket
import sys


def _http_client() -> Any:
    """``http.client`` without its eager ``import ssl`` (only for HTTPSConnection, which the
    bridge does not use: the transport sets TLS up itself, and only for https)."""
    if "http.client" not in sys.modules and "ssl" not in sys.modules:
        sys.modules["ssl"] = None  # type: ignore[assignment] - makes its `import ssl` fail
        try:
            import http.client
        finally:
            del sys.modules["ssl"]
    import http.client

    return http.client


http_client = _http_client()
MAX_LINE = 65536  # http.client's _MAXLINE
MAX_LINES = 100  # http.client's _MAXHEADERS
HEAD_LIMIT = (MAX_LINES + 1) * (MAX_LINE + 1)  # bytes of a head more than http.client would take
# Interim (1xx) heads taken before the final one. HTTP sets no bound; a server sends one 103 Early
# Hints, perhaps a 100 Continue (the bridge sends no Expect) or a few 102 Processing. Go's client
# stopped at 5 until 1.24; a provider that sends 103s without end held the bridge forever.
INTERIM_LIMIT = 16
_BLANK = (b"\r\n", b"\n", b"")
_FOLDED = (b" ", b"\t")
_WHITESPACE = " \t\r\n"  # what HTTP calls whitespace (str.strip() would also take latin-1's NBSP and NEL)


class ProviderFault(http_client.HTTPException):  # type: ignore[misc,name-defined]
    """The provider broke HTTP in a way a new connection would not mend; the text says how (and
    quotes nothing the provider sent: it goes into the client's error)."""


def too_many_interim() -> ProviderFault:
    return ProviderFault(f"more than {INTERIM_LIMIT} interim (1xx) answers and no final one")


class Fields:
    """A response's header fields: what ``http.client`` and the bridge ask of an
    ``email.message.Message`` (``get``, ``get_all``, ``items``, ``in``)."""

    __slots__ = ("_by_name", "_items")

    def __init__(self, items: list[tuple[str, str]]):
        self._items = items
        self._by_name: dict[str, list[str]] = {}
        for name, value in items:
            self._by_name.setdefault(name.lower(), []).append(value)

    def get(self, name: str, default: Any = None) -> Any:
        """The first value of the field (as ``Message.get``)."""
        values = self._by_name.get(name.lower())
        return values[0] if values else default

    def get_all(self, name: str, default: Any = None) -> Any:
        """Every value of the field, in order (``HTTPResponse.getheader`` joins them with ", ")."""
        values = self._by_name.get(name.lower())
        return list(values) if values else default

    def items(self) -> list[tuple[str, str]]:
        return list(self._items)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._by_name

    def __repr__(self) -> str:
        return f"Fields({self._items!r})"


def read_fields(fp: Any) -> Fields:
    """The header block up to its blank line, from a binary file (the response's socket file)."""
    items: list[tuple[str, str]] = []
    for _ in range(MAX_LINES):  # the blank line counts, as in http.client
        line = fp.readline(MAX_LINE + 1)
        if len(line) > MAX_LINE:
            raise http_client.LineTooLong("header line")
        if line in _BLANK:
            return Fields(items)
        text = line.decode("iso-8859-1").strip(_WHITESPACE)
        if line[:1] in _FOLDED:
            if items and text:
                name, value = items[-1]
                items[-1] = (name, f"{value} {text}" if value else text)
            continue
        name, colon, value = text.partition(":")
        if colon and name and name[-1] not in _WHITESPACE:
            items.append((name, value.strip(_WHITESPACE)))
    raise http_client.HTTPException(f"got more than {MAX_LINES} headers")


class Reader(io.RawIOBase):
    """A response's bytes: those read ahead, then the socket, without waiting after ``stream()``;
    ``waiting``: the last read found nothing yet (rather than the end of the stream)."""

    def __init__(self, sock: socket.socket, ahead: bytes = b""):
        super().__init__()
        self.sock = sock
        self._ahead = memoryview(ahead)  # read already (the connection waited for the head without blocking)
        self._hold: Any = None
        self.plain = type(sock) is socket.socket  # not TLS
        self.flags = 0
        self.waiting = False

    def makefile(self, _mode: str) -> io.BufferedReader:
        """What ``HTTPResponse`` reads (it calls ``sock.makefile("rb")``)."""
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.sock.fileno()

    def hold(self) -> None:
        """Keep the socket open until the response is read, as http.client's own file does: it
        closes a connection that will not be kept before the body is read."""
        self._hold = self.sock.makefile("rb", buffering=0)

    def close(self) -> None:
        if self._hold is not None:
            self._hold.close()
            self._hold = None
        super().close()

    def readinto(self, buffer: Any) -> int | None:
        if self._ahead:
            size = min(len(buffer), len(self._ahead))
            buffer[:size] = self._ahead[:size]
            self._ahead = self._ahead[size:]
            return size
        try:
            return self.sock.recv_into(buffer, 0, self.flags) if self.plain else self.sock.recv_into(buffer)
        except OSError as error:
            if not nothing_arrived(error):
                raise
            if isinstance(error, BlockingIOError) and not self.flags:
                raise TimeoutError("no answer in time") from None  # a blocking read: SO_RCVTIMEO ran out
            self.waiting = True
            return None

    def stream(self) -> None:
        """From now on never wait for more."""
        if self.plain:
            self.flags = socket.MSG_DONTWAIT
        else:
            self.sock.settimeout(0.0)

    def nothing_yet(self) -> bool:
        """Whether the empty read just made found nothing yet, rather than the end."""
        waiting, self.waiting = self.waiting, False
        return waiting


class Response(http_client.HTTPResponse):  # type: ignore[misc,name-defined]
    """``http.client``'s response, its socket read by a ``Reader`` and its fields by
    ``read_fields``."""

    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None,
                 ahead: bytes = b""):
        self.reader = Reader(sock, ahead)
        super().__init__(self.reader, debuglevel, method, url)

    def begin(self) -> None:
        if self.headers is not None:
            return  # already begun
        interim = 0
        while True:
            version, status, reason = self._read_status()
            if not _interim(status):
                break
            interim += 1
            if interim > INTERIM_LIMIT:
                raise too_many_interim()
            read_fields(self.fp)  # an interim answer's fields (http.client skips only 100)
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http_client.UnknownProtocol(version)
        self.code = self.status = status
        self.reason = reason.strip()
        self.headers = self.msg = read_fields(self.fp)
        self.chunked = (self.headers.get("transfer-encoding") or "").lower() == "chunked"
        self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None if self.chunked else _length(self.headers.get("content-length"))
        if status in (http_client.NO_CONTENT, http_client.NOT_MODIFIED) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # no length and not chunked: the body ends when the connection does
        if self.will_close:
            self.reader.hold()  # http.client closes the connection once begin() returns


def nothing_arrived(error: OSError) -> bool:
    """Whether a read failed only because nothing has arrived yet: EAGAIN, or TLS's
    SSLWantReadError (known by name: ``ssl`` is imported only for https)."""
    return isinstance(error, BlockingIOError) or type(error).__name__ == "SSLWantReadError"


def _interim(status: int) -> bool:
    """A 1xx answer that another follows: 100 Continue, 102 Processing, 103 Early Hints (101
    switches protocols: it is the last)."""
    return 100 <= status < 200 and status != 101


def final_head_in(data: bytes) -> bool:
    """Whether ``data``, the first bytes of an answer, are a whole final head: the usual case,
    "HTTP/1.1 200 …" and its blank line, in one read. Otherwise ``Heads`` takes them."""
    return data[9:10] != b"1" and (b"\n\r\n" in data or b"\n\n" in data)


class Heads:
    """An answer's first bytes as they arrive, up to its final head: each interim (1xx) head is
    dropped once whole (at most INTERIM_LIMIT of them), and the search for a head's end goes on
    where the last one stopped, so each byte is looked at about once however it is cut."""

    __slots__ = ("data", "_interim", "_searched")

    def __init__(self) -> None:
        self.data = bytearray()
        self._interim = 0
        self._searched = 0  # where the current head's end may start, at the earliest

    def add(self, more: bytes) -> bool:
        """Take ``more``; whether a whole final head is here (or more of one than http.client
        would take: it refuses it from these bytes)."""
        data = self.data
        data += more
        while True:
            end = _head_end(data, self._searched)
            if end < 0:
                self._searched = max(0, len(data) - 2)  # a blank line may begin in the last two bytes
                return len(data) > HEAD_LIMIT
            status = bytes(data[: data.find(b"\n")]).split(None, 2)[1:2]
            if not (status and len(status[0]) == 3 and status[0].isdigit() and _interim(int(status[0]))):  # as http.client
                return True
            self._interim += 1
            if self._interim > INTERIM_LIMIT:
                raise too_many_interim()
            del data[:end]
            self._searched = 0


def _head_end(data: bytearray, start: int) -> int:
    """Where the first head in ``data`` ends (after its blank line), looking from ``start``; -1:
    not yet."""
    crlf = data.find(b"\n\r\n", start)
    lf = data.find(b"\n\n", start, len(data) if crlf < 0 else crlf + 2)
    if lf >= 0:
        return lf + 2
    return crlf + 3 if crlf >= 0 else -1


def _length(value: str | None) -> int | None:
    """Content-Length as http.client reads it: an integer, else unknown (None)."""
    try:
        length = int(value) if value else None
    except ValueError:
        return None
    return length if length is None or length >= 0 else None
