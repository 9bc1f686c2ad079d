"""The provider's response: its head read without the email package, held to http.client's own
HTTPResponse on the same bytes (and to the RFC where the two differ on purpose), and its reader."""

from __future__ import annotations

import http.client
import socket
import struct

import pytest

from projector.runtime.bridge.response import INTERIM_LIMIT, Heads, ProviderFault, Response, final_head_in

JSON = b'{"jsonrpc":"2.0","id":1,"result":{}}'


_OPENED: list[socket.socket] = []


@pytest.fixture(autouse=True)
def _close_sockets():
    yield
    while _OPENED:
        _OPENED.pop().close()


def _begun(cls: type[http.client.HTTPResponse], data: bytes, method: str = "POST") -> http.client.HTTPResponse:
    """A response to ``method``, read from a real socket whose peer sent ``data`` and closed."""
    ours, theirs = socket.socketpair()
    _OPENED.append(ours)
    with theirs:
        theirs.sendall(data)
    response = cls(ours, method=method)
    response.begin()
    return response


def _seen(response: http.client.HTTPResponse) -> dict[str, object]:
    """Everything http.client and the bridge take from a head, and the body http.client reads after it."""
    return {
        "status": response.status,
        "reason": response.reason,
        "version": response.version,
        "chunked": response.chunked,
        "length": response.length,
        "will_close": response.will_close,
        "content-type": response.getheader("Content-Type"),
        "session": response.getheader("mcp-session-id"),
        "location": response.getheader("LOCATION", "none"),
        "link": response.getheader("Link"),
        "items": response.getheaders(),
        "body": response.read(),
    }


SAME_AS_HTTP_CLIENT = {
    "json with a length": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 36\r\n"
                          b"Mcp-Session-Id: abc-123\r\n\r\n" + JSON,
    "chunked, any case": b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nTransfer-Encoding: Chunked\r\n\r\n"
                         b"5\r\ndata:\r\n0\r\n\r\n",
    "no length: until closed": b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + JSON,
    "connection: close": b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 36\r\n\r\n" + JSON,
    "http/1.0 keep-alive": b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 36\r\n\r\n" + JSON,
    "http/1.0 without it": b"HTTP/1.0 200 OK\r\nContent-Length: 36\r\n\r\n" + JSON,
    "202 accepted": b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
    "204 with a length": b"HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n",
    "100 continue first": b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n" + JSON,
    "a field twice": b"HTTP/1.1 200 OK\r\nLink: <a>\r\nContent-Length: 2\r\nlink: <b>\r\n\r\n{}",
    "a redirect": b"HTTP/1.1 307 Temporary Redirect\r\nLocation: /mcp/\r\nContent-Length: 0\r\n\r\n",
    "a bad length": b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\nConnection: close\r\n\r\n" + JSON,
    "a negative length": b"HTTP/1.1 200 OK\r\nContent-Length: -5\r\n\r\n" + JSON,
    "an empty value": b"HTTP/1.1 200 OK\r\nMcp-Session-Id:\r\nContent-Length: 0\r\n\r\n",
    "lf line ends": b"HTTP/1.1 200 OK\nContent-Type: application/json\nContent-Length: 36\n\n" + JSON,
    "latin-1 value": b"HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 0\r\n\r\n",
    "a proxy's close": b"HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 0\r\n\r\n",
}


@pytest.mark.parametrize("data", SAME_AS_HTTP_CLIENT.values(), ids=SAME_AS_HTTP_CLIENT.keys())
def test_a_head_reads_as_http_client_reads_it(data):
    assert _seen(_begun(Response, data)) == _seen(_begun(http.client.HTTPResponse, data))


def test_a_head_answer_has_no_body():
    data = b"HTTP/1.1 200 OK\r\nContent-Length: 36\r\n\r\n"
    assert _seen(_begun(Response, data, "HEAD")) == _seen(_begun(http.client.HTTPResponse, data, "HEAD"))


def test_values_lose_the_whitespace_around_them_as_rfc_9110_says():
    response = _begun(Response, b"HTTP/1.1 200 OK\r\nMcp-Session-Id:  abc \t\r\nContent-Length: 0\r\n\r\n")
    assert response.getheader("Mcp-Session-Id") == "abc"  # the email package keeps "abc \t"
    latin = _begun(Response, b"HTTP/1.1 200 OK\r\nX-Name: \xa0caf\xe9\xa0\r\nContent-Length: 0\r\n\r\n")
    assert latin.getheader("X-Name") == "\xa0caf\xe9\xa0", "only HTTP's whitespace (space, tab) is taken off"


def test_a_folded_line_continues_its_field_with_one_space():
    response = _begun(Response, b"HTTP/1.1 200 OK\r\nX-Long: one\r\n  two\r\n\tthree\r\n \r\nContent-Length: 0\r\n\r\n")
    assert response.getheader("X-Long") == "one two three"
    assert response.length == 0


def test_a_line_that_is_no_field_is_skipped_and_the_rest_still_read():
    response = _begun(Response, b"HTTP/1.1 200 OK\r\nnonsense\r\nBad Name : x\r\nContent-Length: 2\r\n\r\n{}")
    assert [name for name, _ in response.getheaders()] == ["Content-Length"]
    assert response.read() == b"{}"  # the email package stops at "nonsense": no length, read until closed


@pytest.mark.parametrize("cls", [Response, http.client.HTTPResponse])
def test_the_limits_are_http_clients(cls):
    many = b"".join(b"X-%d: v\r\n" % i for i in range(100))
    with pytest.raises(http.client.HTTPException, match="more than 100 headers"):
        _begun(cls, b"HTTP/1.1 200 OK\r\n" + many + b"\r\n")
    _begun(cls, b"HTTP/1.1 200 OK\r\n" + many[: many.index(b"X-99")] + b"\r\n")  # 99 and the blank line are fine
    with pytest.raises(http.client.LineTooLong):
        _begun(Response, b"HTTP/1.1 200 OK\r\nX: " + b"v" * 70_000 + b"\r\n\r\n")
    with pytest.raises(http.client.UnknownProtocol):
        _begun(Response, b"HTTP/2.0 200 OK\r\n\r\n")


def test_the_head_is_read_without_the_email_package():
    fields = _begun(Response, SAME_AS_HTTP_CLIENT["json with a length"]).headers
    assert type(fields).__module__ == "projector.runtime.bridge.response"
    assert "mcp-session-id" in fields and "Content-Type" in fields and "X-Missing" not in fields


# --------------------------------------------------------------------------- the reader


def test_after_the_head_a_read_never_waits_and_tells_nothing_yet_from_the_end():
    ours, theirs = socket.socketpair()
    _OPENED.extend((ours, theirs))
    theirs.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
    response = Response(ours, method="POST")
    response.begin()
    response.reader.stream()
    assert response.fp.read1(1 << 16) == b"" and response.reader.nothing_yet()
    theirs.sendall(b"data: 1\n\n")
    assert response.fp.read1(1 << 16) == b"data: 1\n\n"
    theirs.close()
    assert response.fp.read1(1 << 16) == b"" and not response.reader.nothing_yet()


def test_the_body_is_read_after_http_client_closed_the_connection():
    """http.client closes a connection that will not be kept before the body is read: the
    response's reader keeps the socket open until it is done, as http.client's own file does."""
    ours, theirs = socket.socketpair()
    with theirs:
        theirs.sendall(b"HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\nContent-Length: 4\r\n\r\nnope")
    response = Response(ours, method="POST")
    response.begin()
    ours.close()
    assert response.will_close and response.read() == b"nope"
    response.close()
    assert ours.fileno() == -1


def test_a_head_that_stops_coming_is_a_timeout():
    ours, theirs = socket.socketpair()
    _OPENED.extend((ours, theirs))
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("@ll", 0, 200_000))
    theirs.sendall(b"HTTP/1.1 200 OK\r\nContent-")
    with pytest.raises(TimeoutError):
        Response(ours, method="POST").begin()


def test_bytes_read_ahead_are_the_start_of_the_response():
    """The connection reads a head without waiting before http.client parses it: the response
    reads those bytes first, then the socket."""
    ours, theirs = socket.socketpair()
    _OPENED.extend((ours, theirs))
    theirs.sendall(b"rest}")
    response = Response(ours, method="POST", ahead=b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{\"a\":")
    response.begin()
    assert response.status == 200 and response.read() == b'{"a":rest}'


def test_interim_answers_are_skipped_to_the_final_one():
    """http.client skips only 100 Continue: a 103 Early Hints would be taken as the answer, and
    the real one read as the next request's."""
    data = b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
    response = _begun(Response, data)
    assert (response.status, response.getheader("Link"), response.read()) == (200, None, b"{}")


@pytest.mark.parametrize(("data", "whole"), [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", True),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", False),
    (b"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", True),
    (b"HTTP/1.1 200 OK\nContent-Length: 2\n\r\n{}", True),  # LF lines, a CRLF blank line: http.client reads it
    (b"HTTP/1.1 100 Continue\r\n\r\n", False),
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\n", True),
    (b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\n", False),
    (b"HTTP/1.1 101 Switching Protocols\r\n\r\n", True),
    (b"garbage\r\n\r\n", True),  # whole enough for http.client to refuse
    (b"HTTP/1.1 " + b"1" * 5000 + b" OK\r\n\r\n", True),  # no status (three digits) for int() to choke on: refused
    (b"HTTP/1.1 0103 Early Hints\r\n\r\n", True),  # http.client refuses it, so it is no interim head either
])
def test_a_whole_final_head_is_recognised_before_it_is_parsed(data, whole):
    """In one read (the usual, recognised at once, or through Heads), or a byte at a time."""
    assert (final_head_in(data) or Heads().add(data)) is whole
    heads = Heads()
    assert [heads.add(data[at : at + 1]) for at in range(len(data))][-1] is whole


def test_interim_heads_are_dropped_as_they_come_and_bounded():
    """A provider that sends 103 Early Hints without end: each is dropped once whole (the bytes
    kept are the current head's), and past INTERIM_LIMIT of them the answer is refused."""
    hint = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
    heads = Heads()
    assert not heads.add(hint * INTERIM_LIMIT + hint[:30])
    assert bytes(heads.data) == hint[:30]
    assert not heads.add(hint[30:-1])
    with pytest.raises(ProviderFault, match="more than 16 interim"):
        heads.add(hint[-1:])
    response = Response(socket.socket(), method="POST", ahead=hint * (INTERIM_LIMIT + 1) + b"HTTP/1.1 200 OK\r\n\r\n")
    with pytest.raises(ProviderFault, match="interim"):  # the same bound where the head is read blocking (the DELETE)
        response.begin()
    response.reader.sock.close()
