"""A test's own small HTTP endpoint on loopback, in the test's process (an OAuth token endpoint,
a provider that refuses tokens or scopes): the standard library's server on a thread."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Quiet(BaseHTTPRequestHandler):
    """A handler that logs nothing (a request may carry a token)."""

    def log_message(self, *_args: object) -> None:
        pass

    def json_body(self) -> dict:
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def answer(self, status: int, body: dict | None, headers: dict[str, str] | None = None) -> None:
        """``body`` as JSON (None: no body), with ``headers``."""
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class Loopback:
    """``handler`` served on 127.0.0.1 at a free port; ``url`` ends with ``path``."""

    def __init__(self, handler: type[BaseHTTPRequestHandler], path: str) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}{path}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
