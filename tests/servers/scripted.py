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


INITIALIZED = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": "2025-11-25", "capabilities": {},
                                                     "serverInfo": {"name": "scripted", "version": "1"}}}


class AuthorizationServer(Scripted):
    """An MCP server that is its own authorization server: Protected Resource Metadata, metadata
    naming ``revocation`` (when given) and the ``pkce`` methods it offers (None: the field left
    out), registration of a confidential client (HTTP Basic at the token endpoint), an
    authorization that approves at once, and one token pair (canary-access-7, canary-refresh-7)."""

    def __init__(self, revocation: Answer | None = Answer(200), pkce: tuple[str, ...] | None = ("S256",)) -> None:
        super().__init__()
        origin = self.origin
        self.routes.update({
            "POST /mcp": self.mcp,
            "GET /.well-known/oauth-protected-resource/mcp": Answer(200, {"resource": f"{origin}/mcp", "authorization_servers": [origin]}),
            "GET /.well-known/oauth-authorization-server": Answer(200, {
                "issuer": origin, "authorization_endpoint": f"{origin}/authorize", "token_endpoint": f"{origin}/token",
                "registration_endpoint": f"{origin}/register", "response_types_supported": ["code"],
                **({"code_challenge_methods_supported": list(pkce)} if pkce is not None else {}),
                "token_endpoint_auth_methods_supported": ["client_secret_basic"],
                **({"revocation_endpoint": f"{origin}/revoke"} if revocation else {})}),
            "POST /register": lambda request: Answer(201, {"client_id": "client-7", "client_secret": "client-secret-7",
                                                           "token_endpoint_auth_method": "client_secret_basic",
                                                           "redirect_uris": request.document["redirect_uris"]}),
            "GET /authorize": lambda request: Answer(302, headers=(
                ("Location", f"{request.query['redirect_uri']}?code=code-7&state={request.query['state']}"),)),
            "POST /token": Answer(200, {"access_token": "canary-access-7", "token_type": "Bearer", "expires_in": 3600,
                                        "refresh_token": "canary-refresh-7"}),
        })
        if revocation:
            self.routes["POST /revoke"] = revocation

    def mcp(self, request: Received) -> Answer:
        if request.headers.get("Authorization") == "Bearer canary-access-7":
            return Answer(200, INITIALIZED)
        return Answer(401, {"error": "invalid_token"}, headers=(
            ("WWW-Authenticate", f'Bearer resource_metadata="{self.origin}/.well-known/oauth-protected-resource/mcp"'),))

    def revocations(self) -> list[Received]:
        return [r for r in self.received if r.path == "/revoke"]
