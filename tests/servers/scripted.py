"""A loopback HTTP server that answers each path as a test scripts it and keeps what it was sent:
an MCP server's 401 and metadata, an authorization server's endpoints (registration, token,
revocation), each as small as the test that needs it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from projector.core.record import Record


class Answer(Record):
    status: int
    body: object = None  # a JSON document; None: no body
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0  # seconds before answering (a server that hangs)


class Received(Record):
    method: str
    path: str
    headers: dict[str, str]
    query: dict[str, str]
    form: dict[str, str]  # a form body's fields (OAuth's requests), else empty
    document: object = None  # a JSON body


class Scripted:
    """``routes`` maps "METHOD /path" to an Answer, or to a function of the request that returns
    one; anything else is a 404. ``received`` lists every request in order."""

    def __init__(self, routes: dict[str, Answer | Callable[[Received], Answer]] | None = None) -> None:
        self.routes = dict(routes or {})
        self.received: list[Received] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                form = {k: v[0] for k, v in parse_qs(body).items()} if "form-urlencoded" in self.headers.get("Content-Type", "") else {}
                document = json.loads(body) if "json" in self.headers.get("Content-Type", "") and body else None
                parts = urlsplit(self.path)
                request = Received(method=self.command, path=parts.path, headers=dict(self.headers.items()),
                                   query={k: v[0] for k, v in parse_qs(parts.query).items()}, form=form, document=document)
                scripted.received.append(request)
                route = scripted.routes.get(f"{self.command} {request.path}", Answer(404, {"error": "not_found"}))
                answer = route(request) if callable(route) else route
                time.sleep(answer.delay)
                data = b"" if answer.body is None else json.dumps(answer.body).encode()
                try:
                    self.send_response(answer.status)
                    for name, value in answer.headers:
                        self.send_header(name, value)
                    if data:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up waiting
                    pass

            do_GET = do_POST = do_DELETE = handle_any  # noqa: N815 (http.server's names)

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        return [f"{r.method} {r.path}" for r in self.received]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
