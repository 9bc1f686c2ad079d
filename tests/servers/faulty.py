"""A fault-injecting Streamable HTTP upstream on loopback (stdlib, in the test's own process).

It answers ``initialize`` (a new session id each time), 202 to notifications, and misbehaves on
purpose for one ``fault``:

- ``stall-init``: ``initialize`` is read and never answered;
- ``stall-note``: every notification is read and never answered;
- ``huge-retry``: a request's stream sends a priming event with ``retry: 100000000`` and ends;
  the GET that resumes it (``Last-Event-ID``) carries the reply;
- ``not-rpc``: a request is answered ``200 {"hello": "world"}``;
- ``gone``: every request that carries a session id gets 404 (so the retry in a new session too);
- ``listen-drop``: the standalone GET stream sends a notification (event id ``s1``, ``retry: 100``)
  and ends; the GET that resumes it from ``s1`` sends a request of the server's own (id 7) and
  stays open;
- ``slow-call``: a ``tools/call`` is answered in two parts, the first bytes of its head at once and
  the rest ``SLOW_CALL`` seconds later;
- ``slow-read``: a request's body is read 16 KiB at a time, 50 ms apart, through a small receive
  buffer (a provider that takes a large request slowly);
- ``stall-delete``: the DELETE that ends a session is read and never answered.

Hostile ones (issue 25), each bounded in time (``STALL_LIMIT``) and in what it sends (``FLOOD_LIMIT``):

- ``early-hints``: a ``tools/call`` and the DELETE get ``103 Early Hints`` heads, fifty every 10 ms,
  and never a final answer;
- ``sse-long-line``: a ``tools/call``'s stream sends ``data: xxxx…`` and never a line end;
- ``sse-long-event``: a ``tools/call``'s stream sends ``data: xxxx`` lines and never a blank line;
- ``listen-long-line``: the standalone GET stream sends ``data: xxxx…`` and never a line end;
- ``sse-long-retry``: a ``tools/call``'s stream sends a ``retry`` of 5,000 digits, then its answer;
- ``sse-odd-id``: a ``tools/call``'s stream sends an event id outside Latin-1 and ends before the
  answer (its resumption sends that id back in ``Last-Event-ID``);
- ``sse-chatter``: a ``tools/call``'s stream sends comment lines (``:``) as fast as it can, forever;
- ``bad-chunked``: a ``tools/call`` is answered chunked, with a chunk size that is not hexadecimal;
- ``endless-body``: a ``tools/call``'s answer promises 1,000 bytes, sends ten and stalls.

``tls=(certificate, key)`` serves https (TLS 1.3, whose session tickets follow the handshake).

Every HTTP request is recorded in ``requests`` (method, JSON-RPC method and id, headers), in order.
Without a fault it is a fast stdlib upstream (a benchmark's, like bench-bridges' ``rec``):

    python faulty.py               # prints its URL (a free port on 127.0.0.1), serves until killed
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

STALL_LIMIT = 60.0  # seconds a stalled answer is held at most (the test ends it sooner)
FLOOD_LIMIT = 1 << 30  # bytes a flooding answer sends at most (the bridge should give up long before)
SLOW_CALL = 2.0


class Faulty:
    def __init__(self, fault: str, tls: tuple[str, str] | None = None):
        self.fault = fault
        self.scheme = "https" if tls else "http"
        self.requests: list[dict[str, Any]] = []
        self.released = threading.Event()
        self._sessions = itertools.count(1)
        self._pending: dict[str, Any] = {}  # session -> id of the request whose stream was cut
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                length = int(self.headers.get("Content-Length") or 0)
                body = owner._read_slowly(self, length) if owner.fault == "slow-read" else self.rfile.read(length)
                try:
                    message = json.loads(body)
                except ValueError:
                    message = {}
                owner._record(self, message, body)
                owner._post(self, message)

            def do_GET(self) -> None:  # noqa: N802
                owner._record(self, {})
                owner._get(self)

            def do_DELETE(self) -> None:  # noqa: N802
                owner._record(self, {})
                if owner.fault == "stall-delete":
                    return owner._stall()
                if owner.fault == "early-hints":
                    return owner._early_hints(self)
                self._send(200, b"", "application/json")

            def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        if tls:
            import ssl

            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}/mcp"

    def stop(self) -> None:
        self.released.set()
        self.server.shutdown()
        self.server.server_close()

    def methods(self) -> list[str]:
        return [r["rpc"] or r["method"] for r in self.requests]

    def _record(self, handler: Any, message: dict[str, Any], body: bytes = b"") -> None:
        self.requests.append({
            "body": body,
            "method": handler.command, "rpc": message.get("method"), "id": message.get("id"),
            "session": handler.headers.get("Mcp-Session-Id"), "auth": handler.headers.get("Authorization"),
            "last_event_id": handler.headers.get("Last-Event-ID"), "at": time.monotonic(),
        })

    def _stall(self) -> None:
        self.released.wait(STALL_LIMIT)

    def _read_slowly(self, handler: Any, length: int) -> bytes:
        import socket

        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        pieces: list[bytes] = []
        while length > 0 and not self.released.is_set():
            piece = handler.rfile.read1(min(length, 16384))
            if not piece:
                break
            pieces.append(piece)
            length -= len(piece)
            time.sleep(0.05)
        return b"".join(pieces)

    def _post(self, handler: Any, message: dict[str, Any]) -> None:
        method, session = message.get("method"), handler.headers.get("Mcp-Session-Id")
        if method == "initialize":
            if self.fault == "stall-init":
                return self._stall()
            result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "faulty", "version": "1"}}
            reply = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
            return handler._send(200, reply, "application/json", {"Mcp-Session-Id": f"session-{next(self._sessions)}"})
        if "id" not in message or "method" not in message:
            if self.fault == "stall-note":
                return self._stall()
            return handler._send(202, b"", "application/json")
        if self.fault == "gone" and session:
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Session not found"}})
            return handler._send(404, body.encode(), "application/json")
        if self.fault == "not-rpc":
            return handler._send(200, b'{"hello":"world"}', "application/json")
        if self.fault in ("float-id", "extra-member", "utf-16", "duplicate-id"):  # answers a parser may read otherwise
            answer = {"jsonrpc": "2.0", "id": message.get("id"), "result": {"tools": []}}
            if self.fault == "utf-16":  # JSON in UTF-16, which json.loads reads too
                return handler._send(200, json.dumps(answer).encode("utf-16-le"), "application/json")
            if self.fault == "duplicate-id":  # a first-wins parser reads "x", a last-wins one the request's id
                return handler._send(200, json.dumps(answer).replace('"id"', '"id": "x", "id"', 1).encode(), "application/json")
            answer.update({"id": float(answer["id"])} if self.fault == "float-id" else {"extra": 1})
            return handler._send(200, json.dumps(answer).encode(), "application/json")
        if self.fault == "slow-call" and method == "tools/call":
            reply = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"content": []}}).encode()
            whole = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(reply), reply)
            handler.wfile.write(whole[:10])
            time.sleep(SLOW_CALL)
            handler.wfile.write(whole[10:])
            return None
        if method == "tools/call" and self.fault in _HOSTILE:
            return _HOSTILE[self.fault](self, handler)
        if self.fault == "huge-retry":
            self._pending[session] = message.get("id")
            handler.close_connection = True
            handler.send_response(200)
            handler.send_header("Content-Type", "text/event-stream")
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(b"id: cut-1\nretry: 100000000\ndata: \n\n")
            return None
        reply = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": {"tools": []}}).encode()
        return handler._send(200, reply, "application/json")

    def _get(self, handler: Any) -> None:
        session = handler.headers.get("Mcp-Session-Id")
        if self.fault == "listen-drop":
            return self._listen(handler)
        if self.fault == "listen-long-line":
            return self._flood(handler, b"data: ", b"x" * (1 << 20))
        if not handler.headers.get("Last-Event-ID") or session not in self._pending:
            return handler._send(405, b"", "text/plain")
        reply = {"jsonrpc": "2.0", "id": self._pending.pop(session), "result": {"tools": [], "resumed": True}}
        event = f"id: cut-2\ndata: {json.dumps(reply)}\n\n".encode()
        return handler._send(200, event, "text/event-stream")

    def _listen(self, handler: Any) -> None:
        resumed = handler.headers.get("Last-Event-ID") == "s1"
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Connection", "close")
        handler.end_headers()
        handler.close_connection = True
        if not resumed:
            note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            handler.wfile.write(f"id: s1\nretry: 100\ndata: {json.dumps(note)}\n\n".encode())
            return
        ask = {"jsonrpc": "2.0", "id": 7, "method": "roots/list"}
        handler.wfile.write(f"id: s2\ndata: {json.dumps(ask)}\n\n".encode())
        handler.wfile.flush()
        self._stall()

    # ------------------------------------------------------------------ hostile answers (issue 25)

    def _early_hints(self, handler: Any) -> None:
        hints = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" * 50
        self._keep_sending(handler, b"", lambda: (time.sleep(0.01), hints)[1])

    def _flood(self, handler: Any, first: bytes, each: bytes) -> None:
        """An SSE stream: ``first``, then ``each`` again and again."""
        handler.close_connection = True
        head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        self._keep_sending(handler, head + first, lambda: each)

    def _keep_sending(self, handler: Any, first: bytes, more: Any) -> None:
        """``first``, then what ``more()`` makes, until the bridge hangs up, the test ends, or
        FLOOD_LIMIT bytes or STALL_LIMIT seconds."""
        handler.close_connection = True
        sent, until = 0, time.monotonic() + STALL_LIMIT
        try:
            handler.wfile.write(first)
            while sent < FLOOD_LIMIT and time.monotonic() < until and not self.released.is_set():
                data = more()
                handler.wfile.write(data)
                sent += len(data)
        except OSError:
            pass  # the bridge hung up: what it should do

    def _long_retry(self, handler: Any) -> None:
        handler.close_connection = True
        answer = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}).encode()
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                            b"retry: " + b"9" * 5000 + b"\n\ndata: " + answer + b"\n\n")

    def _odd_id(self, handler: Any) -> None:
        handler.close_connection = True
        handler.wfile.write("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                            "id: \u20ac-1\nretry: 10\ndata: \n\n".encode())

    def _bad_chunked(self, handler: Any) -> None:
        handler.close_connection = True
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                            b"zz\r\n{}\r\n0\r\n\r\n")

    def _endless_body(self, handler: Any) -> None:
        handler.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
        handler.wfile.flush()
        self._stall()


_HOSTILE = {
    "early-hints": Faulty._early_hints,
    "sse-long-line": lambda owner, handler: owner._flood(handler, b"data: ", b"x" * (1 << 20)),
    "sse-long-event": lambda owner, handler: owner._flood(handler, b"", b"data: " + b"x" * 1000 + b"\n"),
    "sse-chatter": lambda owner, handler: owner._flood(handler, b"", b":\n" * 2048),
    "sse-long-retry": Faulty._long_retry,
    "sse-odd-id": Faulty._odd_id,
    "bad-chunked": Faulty._bad_chunked,
    "endless-body": Faulty._endless_body,
}


if __name__ == "__main__":
    server = Faulty("none")
    print(server.url, flush=True)
    threading.Event().wait()
