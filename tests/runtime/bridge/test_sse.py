"""The SSE decoder against the spec's edge cases (WHATWG HTML, "Interpreting an event stream"),
fed whole and byte by byte (a socket may cut anywhere)."""

from __future__ import annotations

import pytest

from projector.runtime.bridge.sse import Decoder, TooLarge

CASES = {
    # name: (stream, [(type, data)...], last id, retry)
    "multi-line data joins with LF": (b"data: a\ndata: b\n\n", [("message", "a\nb")], "", None),
    "CRLF line ends": (b"data: a\r\ndata: b\r\n\r\n", [("message", "a\nb")], "", None),
    "CR line ends": (b"data: a\rdata: b\r\r", [("message", "a\nb")], "", None),
    "mixed line ends": (b"data: a\n\r\ndata: b\r\n\n", [("message", "a"), ("message", "b")], "", None),
    "a leading BOM is dropped": (b"\xef\xbb\xbfdata: a\n\n", [("message", "a")], "", None),
    "only one BOM is dropped": (b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n", [], "", None),
    "comments are skipped": (b": ping\ndata: a\n: more\n\n", [("message", "a")], "", None),
    "one leading space is removed": (b"data:  a\ndata:b\n\n", [("message", " a\nb")], "", None),
    "a field without colon is empty": (b"data\ndata\n\n", [("message", "\n")], "", None),
    "event names the type": (b"event: note\ndata: a\n\n", [("note", "a")], "", None),
    "retry with digits": (b"retry: 1500\n\n", [], "", 1500),
    "retry not all digits is ignored": (b"retry: 15x\nretry: -1\nretry:  3\nretry: 1_0\n\n", [], "", None),
    "id persists across events": (b"id: 7\ndata: a\n\ndata: b\n\n", [("message", "a"), ("message", "b")], "7", None),
    "id with NUL is ignored": (b"id: 1\nid: 2\x00\n\n", [], "1", None),
    "empty id resets it": (b"id: 1\n\nid\n\n", [], "", None),
    "a priming event has empty data": (b"id: p\ndata: \n\n", [("message", "")], "p", None),
    "no data: no event, id still moves": (b"id: q\nevent: x\n\n", [], "q", None),
    "an event cut at the end is dropped": (b"data: a\n\ndata: b\n", [("message", "a")], "", None),
    "unknown fields are ignored": (b"foo: bar\ndata: a\n\n", [("message", "a")], "", None),
    "UTF-8 split across chunks": ("data: \u00e9\u4e2d\n\n".encode(), [("message", "\u00e9\u4e2d")], "", None),
}


def decoded(stream: bytes, pieces: list[bytes]) -> tuple[list[tuple[str, str]], str, int | None]:
    decoder = Decoder()
    events = [(e.type, e.data) for piece in pieces for e in decoder.feed(piece)]
    return events, decoder.last_id, decoder.retry


@pytest.mark.parametrize("name", CASES)
def test_spec_edge_cases_whole_and_byte_by_byte(name):
    stream, events, last_id, retry = CASES[name]
    assert decoded(stream, [stream]) == (events, last_id, retry)
    assert decoded(stream, [stream[i : i + 1] for i in range(len(stream))]) == (events, last_id, retry)


def test_a_long_line_in_many_chunks_is_joined_once():
    payload = b"x" * (5 << 20)
    chunks = [b"data: "] + [payload[i : i + 65536] for i in range(0, len(payload), 65536)] + [b"\n\n"]
    events, _, _ = decoded(b"", chunks)
    assert events == [("message", payload.decode())]


@pytest.mark.parametrize("cut", [1, 7, 65536])
def test_an_event_of_the_limit_passes_and_one_byte_more_is_refused(cut):
    """The limit is the event's data (the lines joined with LF), whether it comes as one line
    or many, whole or cut anywhere; a line may hold it after its field name. (Here 1 KiB; the
    bridge's own, 256 MiB, is tested against a provider in test_hostile_provider.)"""

    def feed(stream: bytes) -> list[str]:
        decoder = Decoder(limit=1024)
        return [e.data for at in range(0, len(stream), cut) for e in decoder.feed(stream[at : at + cut])]

    assert feed(b"data: " + b"x" * 1024 + b"\n\n") == ["x" * 1024]
    assert feed(b"data: " + b"x" * 511 + b"\ndata: " + b"y" * 512 + b"\n\n") == ["x" * 511 + "\n" + "y" * 512]
    with pytest.raises(TooLarge, match="an event larger than|a line longer than"):  # whichever it sees first
        feed(b"data: " + b"x" * 1025 + b"\n\n")
    with pytest.raises(TooLarge, match="an event larger than"):
        feed(b"data: " + b"x" * 512 + b"\ndata: " + b"y" * 512 + b"\n\n")
    with pytest.raises(TooLarge):  # a line without its end, whatever it holds
        feed(b": " + b"c" * 4096)


def test_many_empty_data_lines_take_memory_as_their_bytes_do():
    """`data` lines without a value count one LF each toward the limit: kept as list entries
    (8 bytes each for 5 on the wire) they took several times the limit before it was reached."""
    import tracemalloc

    limit = 256 << 10
    decoder = Decoder(limit=limit)
    stream = b"data\n" * 2048
    tracemalloc.start()
    try:
        with pytest.raises(TooLarge, match="an event larger than"):
            for _ in range(2 * limit // 2048):
                decoder.feed(stream)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * limit, peak


def test_an_event_of_many_lines_is_joined_whole():
    lines = [f"line {n}" for n in range(5000)]
    stream = "".join(f"data: {line}\n" for line in lines).encode() + b"\n"
    assert decoded(stream, [stream]) == ([("message", "\n".join(lines))], "", None)
    assert decoded(stream, [stream[at : at + 777] for at in range(0, len(stream), 777)])[0] == [("message", "\n".join(lines))]


def test_an_event_id_too_long_to_send_back_as_a_header_line_is_ignored():
    """The last id goes back in a resumption's Last-Event-ID header: one longer than a header
    line may be (64 KiB, http.client's) would be a request no server reads, held and copied
    at up to the 256 MiB line limit; it is ignored as an id holding NUL is."""
    decoder = Decoder()
    decoder.feed(b"id: first\ndata: a\n\n")
    decoder.feed(b"id: " + b"x" * (1 << 17) + b"\ndata: b\n\n")
    assert decoder.last_id == "first"
    decoder.feed(b"id: " + b"y" * 60000 + b"\ndata: c\n\n")
    assert decoder.last_id == "y" * 60000
    decoder.feed(("id: " + "\u20ac" * 30000 + "\ndata: d\n\n").encode())  # 90,000 bytes in UTF-8
    assert decoder.last_id == "y" * 60000
