"""Server-sent events, decoded as bytes arrive (WHATWG HTML, "Interpreting an event stream").

Push-style, so the bridge's one loop can feed whatever a socket had and move on: lines end in
CRLF, LF or CR (a CR at the end of a chunk waits for the next one to know); one leading BOM is
dropped; ``:`` lines are comments; ``field: value`` loses one leading space; ``data`` lines join
with LF; ``id`` moves the last event id (ignored when it holds NUL, or is longer than a header
line may be) and persists; ``retry`` counts only when all ASCII digits; a blank line dispatches,
unless the data buffer is empty; an event cut off at the end of the stream is dropped.

A line, and an event's data, are bounded (``MESSAGE_LIMIT``): a stream that goes past it raises
``TooLarge``, which says which.
"""

from __future__ import annotations

# Bytes of one message from the provider, a JSON answer or an event: one JSON-RPC message either
# way, so what gets through does not depend on which the server chose. 256 MiB: far above any tool
# result a client shows (a model's context is a few MB), yet a provider sending without end stops
# before the bridge's memory is a problem (the text once more as it is decoded and parsed).
MESSAGE_LIMIT = 256 << 20


_BLOCK = 1024
_ID_LIMIT = 65536 - len("Last-Event-ID: \r\n")  # an id goes back as a header line (http.client's longest)
_RETRY_DIGITS = 15  # a reconnection time of more digits (ms) is kept as 10**15: thirty thousand years
_FIELD = len(b"data: ")  # a line may hold a whole event's data after its field name


class TooLarge(ValueError):
    """The stream went past the limit: a line without its end, or an event without the blank
    line that ends it."""


class Event:
    """One dispatched event. (A plain class: one is made per message on a stream.)"""

    __slots__ = ("data", "type")

    def __init__(self, data: str, type: str):  # noqa: A002 - the spec's name for it
        self.data = data
        self.type = type  # "message" when the stream named none


class Decoder:
    def __init__(self, limit: int = MESSAGE_LIMIT) -> None:
        self.limit = limit
        self.last_id = ""  # the last event id seen, dispatched or not (what a resumption sends)
        self.retry: int | None = None  # the server's reconnection time in ms, when it gave one
        self._pending: list[bytes] = []  # an unfinished line
        self._held = 0  # its bytes
        self._size = 0  # characters of the event's data so far, with the LFs that will join them
        self._after_cr = False  # the last chunk ended in CR: an LF starting the next one is part of it
        self._started = False  # the BOM check is done
        self._data: list[str] = []  # the event's data lines
        self._blocks: list[str] = []  # before those, runs of _BLOCK lines joined
        self._type = ""

    def feed(self, chunk: bytes) -> list[Event]:
        """The events ``chunk`` completes."""
        if self._after_cr and chunk[:1] == b"\n":
            chunk = chunk[1:]  # the LF of a CRLF split between two chunks
        self._after_cr = False
        if self._started and b"\n" not in chunk and b"\r" not in chunk:
            self._pending.append(chunk)  # a long line arriving piece by piece: join it once, at its end
            self._held += len(chunk)
            if self._held > self.limit + _FIELD:
                self._too_long()
            return []
        text = b"".join(self._pending) + chunk
        if not self._started:
            if len(text) < 3 and b"\xef\xbb\xbf".startswith(text):
                self._pending = [text]
                return []
            self._started = True
            if text.startswith(b"\xef\xbb\xbf"):
                text = text[3:]
        self._after_cr = text.endswith(b"\r")
        lines = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._pending = [lines.pop()]  # after the last line end: unfinished
        self._held = len(self._pending[0])
        if self._held > self.limit + _FIELD:
            self._too_long()
        events = []
        for line in lines:
            event = self._line(line.decode("utf-8", "replace"))
            if event is not None:
                events.append(event)
        return events

    def _too_long(self) -> None:
        raise TooLarge(f"a line longer than {_amount(self.limit)}")

    def _line(self, line: str) -> Event | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data = self._data
            self._size += len(value) + 1 if data or self._blocks else len(value)
            data.append(value)
            if self._size > self.limit:
                raise TooLarge(f"an event larger than {_amount(self.limit)}")
            if len(data) == _BLOCK:  # many lines: one string, not an entry each (8 bytes for an empty line's 5)
                self._blocks.append("\n".join(data))
                data.clear()
        elif name == "event":
            self._type = value
        elif name == "id":
            if "\0" not in value and (len(value) <= _ID_LIMIT // 4 or len(value.encode()) <= _ID_LIMIT):
                self.last_id = value
        elif name == "retry":
            if value.isascii() and value.isdigit():
                digits = value.lstrip("0") or "0"  # past 4,300 digits int() refuses: any reader caps it far below
                self.retry = int(digits) if len(digits) <= _RETRY_DIGITS else 10**_RETRY_DIGITS
        return None

    def _dispatch(self) -> Event | None:
        data, kind = self._data, self._type
        self._data, self._type, self._size = [], "", 0
        if self._blocks:
            data, self._blocks = [*self._blocks, *data], []
        if not data:
            return None
        return Event("\n".join(data), kind or "message")


def _amount(size: int) -> str:
    return f"{size >> 20} MiB" if size >= 1 << 20 else f"{size} bytes"
