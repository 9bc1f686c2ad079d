"""A routed knowledge-base MCP server for tests, on the official MCP Python SDK (mcp 2.x).

It behaves like the real routed endpoint (reference/cartographer.md §2):
- ``kbs``: comma lists, repeatable; absent or empty = every KB; an unknown KB → HTTP 400 with a
  plain text body;
- tools take a ``kb`` argument (an enum of the set) when the set has two or more KBs;
- ``Authorization: Bearer <token>`` is required (401 otherwise);
- ``--mode stateful`` (session ids, DELETE 200; ``--idle`` makes sessions expire → real 404s)
  or ``--mode stateless`` (JSON answers, no session, GET/DELETE 405);
- every HTTP request is recorded as one JSON line in ``--record``;
- ``--session-roots`` adds a tool that asks the client for its roots on the session's own
  channel (the standalone GET stream), as ``ctx.session.list_roots()`` does.

    python routed_kb.py --port P --kbs a,b,c --token T --mode stateful --record requests.jsonl
"""


import argparse
import contextlib
import json
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, ListRoots, Resolve
from mcp.types import ListRootsResult
from serving import add_listen_options, serve


def kb_server(kbs: tuple[str, ...], session_roots: bool = False, **options: Any) -> MCPServer:
    """The server of one KB set; ``options``: more of MCPServer's (its authorization, say)."""
    server = MCPServer("routed-kb", instructions=f"knowledge bases: {', '.join(kbs)}", **options)

    if len(kbs) >= 2:
        KbName = Literal[kbs]  # type: ignore[valid-type]

        @server.tool()
        def search(query: str, kb: KbName) -> str:  # type: ignore[valid-type]
            """Search one knowledge base."""
            return f"{kb}: found {query}"

    else:

        @server.tool()
        def search(query: str) -> str:
            """Search the knowledge base."""
            return f"{kbs[0]}: found {query}"

    @server.tool()
    def big(size: int) -> str:
        """A long answer (for framing tests)."""
        return "x" * size

    def roots() -> ListRoots:
        return ListRoots()

    @server.tool()
    async def first_root(found: Annotated[ListRootsResult, Resolve(roots)]) -> str:
        """Asks the client for its roots (a server→client request inside the call's stream)."""
        return str(found.roots[0].uri) if found.roots else "none"

    if session_roots:

        @server.tool()
        async def session_roots(ctx: Context) -> str:
            """Asks the client for its roots outside this call's stream (the GET stream)."""
            found = await ctx.session.list_roots()
            return str(found.roots[0].uri) if found.roots else "none"

    return server


class Routed:
    def __init__(self, mounted: tuple[str, ...], token: str, mode: str, idle: float | None, record: str, session_roots: bool = False):
        self.mounted = mounted
        self.token = token
        self.mode = mode
        self.idle = idle
        self.record = record
        self.session_roots = session_roots
        self.apps: dict[tuple[str, ...], Any] = {}
        self.stack = contextlib.AsyncExitStack()

    def selected(self, query: str) -> "tuple[tuple[str, ...], str | None]":
        from urllib.parse import parse_qs

        names: list[str] = []
        for value in parse_qs(query, keep_blank_values=True).get("kbs", []):
            names += [n.strip() for n in value.split(",") if n.strip()]
        for name in names:
            if name not in self.mounted:
                return (), f'unknown kb "{name}" in kbs: this server mounts {", ".join(self.mounted)}'
        return tuple(sorted(set(names))) or self.mounted, None

    def server_for(self, kbs: tuple[str, ...]) -> MCPServer:
        return kb_server(kbs, self.session_roots)

    def admits(self, headers: dict[str, str]) -> bool:
        """Whether the request may reach the MCP server: it carries the bearer token."""
        return headers.get("authorization") == f"Bearer {self.token}"

    def recorded_auth(self, header: str | None) -> str | None:
        """The Authorization header as the record keeps it."""
        return header

    async def app_for(self, kbs: tuple[str, ...]) -> Any:
        if kbs not in self.apps:
            app = self.server_for(kbs).streamable_http_app(
                stateless_http=self.mode == "stateless",
                json_response=self.mode == "stateless",
                session_idle_timeout=self.idle,
                max_request_body_size=32 * 1024 * 1024,
            )
            await self.stack.enter_async_context(app.router.lifespan_context(app))
            self.apps[kbs] = app
        return self.apps[kbs]

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await self.stack.aclose()
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        body, receive = await _buffered(receive)
        self._record(scope, headers, body)
        if not self.admits(headers):
            return await _plain(send, 401, "unauthorized")
        if self.mode == "stateless" and scope["method"] in ("GET", "DELETE"):
            return await _plain(send, 405, "method not allowed")
        kbs, problem = self.selected(scope["query_string"].decode())
        if problem:
            return await _plain(send, 400, problem)
        await (await self.app_for(kbs))(scope, receive, send)

    def _record(self, scope: dict, headers: dict, body: bytes) -> None:
        try:
            message = json.loads(body) if body else None
        except ValueError:
            message = None
        entry = {
            "method": scope["method"],
            "path": scope["path"],
            "query": scope["query_string"].decode(),
            "session": headers.get("mcp-session-id"),
            "version": headers.get("mcp-protocol-version"),
            "auth": self.recorded_auth(headers.get("authorization")),
            "accept": headers.get("accept"),
            "last_event_id": headers.get("last-event-id"),
            "rpc": message.get("method") if isinstance(message, dict) else None,
            "id": message.get("id") if isinstance(message, dict) else None,
            "size": len(body),
        }
        with open(self.record, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")


async def _buffered(receive: Any) -> tuple[bytes, Any]:
    chunks, more = [], True
    while more:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunks.append(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(chunks)
    sent = False

    async def replay() -> dict:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return body, replay


async def _plain(send: Any, status: int, text: str) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": text.encode()})


def main() -> None:
    parser = argparse.ArgumentParser()
    add_listen_options(parser)
    parser.add_argument("--kbs", default="handbook,api-a,api-b")
    parser.add_argument("--token", default="test-token")
    parser.add_argument("--mode", choices=["stateful", "stateless"], default="stateful")
    parser.add_argument("--idle", type=float, default=None, help="session idle timeout (seconds)")
    parser.add_argument("--record", required=True)
    parser.add_argument("--session-roots", action="store_true", help="add the session_roots tool")
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve https with this certificate and key")
    options = parser.parse_args()
    routed = Routed(tuple(options.kbs.split(",")), options.token, options.mode, options.idle, options.record, options.session_roots)
    tls = {"ssl_certfile": options.tls[0], "ssl_keyfile": options.tls[1]} if options.tls else {}
    serve(routed, options, log_level="warning", lifespan="on", **tls)


if __name__ == "__main__":
    main()
