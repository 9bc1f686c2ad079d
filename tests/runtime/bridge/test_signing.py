"""A session that starts with no sign-in (runtime.bridge.signing): answered by the bridge with no
tools, a tool call that says what to run, and the provider's tools once a sign-in writes a token,
announced with tools/list_changed. The conformance suite's authorization server plays the whole
sign-in the bridge starts itself (test_peers.py); here the person signs in by hand, with no
browser the bridge could open (no display, no $BROWSER)."""

from __future__ import annotations

import os
import time

from servers import TOKEN
from test_bridge import INIT, INITIALIZED, Layout, Raw

from projector.core import tokenstore


def unsigned(tmp_path, url: str) -> tuple[Layout, dict, str]:
    layout = Layout(tmp_path, url)
    layout.config.write_text(layout.config.read_text().replace("token_env: DOCS_TOKEN", "oauth: true"))
    env = {k: v for k, v in layout.env.items() if k != "DOCS_TOKEN"}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    return layout, env, str(tmp_path / "state" / "projector")


def test_a_session_without_a_sign_in_says_what_to_run_then_gets_the_tools_when_one_is_written(kb_server, tmp_path):
    server = kb_server()
    layout, env, state = unsigned(tmp_path, server.url)
    bridge = Raw(layout, "work/a", env=env)
    try:
        bridge.send(INIT, INITIALIZED)
        opened = bridge.receive()["result"]
        assert opened["capabilities"]["tools"] == {"listChanged": True}
        assert "not signed in to docs: run `projector login docs`" in opened["instructions"]
        bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "x"}}})
        assert bridge.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}
        called = bridge.receive()["result"]  # a client that never lists again still learns what to do
        assert called["isError"] is True and "run `projector login docs`" in called["content"][0]["text"]
        assert server.requests() == []
        assert not os.path.exists(os.path.join(state, "oauth", "docs.sign-in.log")), "no browser here: nothing was started"

        tokenstore.write(state, "docs", tokenstore.Tokens(access_token=TOKEN, expires_at=None))  # `projector login docs`, by hand
        assert bridge.receive(timeout=10) == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        bridge.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert sorted(t["name"] for t in bridge.receive()["result"]["tools"]) == ["big", "first_root", "search"]
        assert {r["auth"] for r in server.requests()} == {f"Bearer {TOKEN}"}
        assert server.requests()[0]["rpc"] == "initialize"  # the provider's session opened with the client's own
    finally:
        bridge.close()


class ScopeGuard:
    """A provider that opens sessions but refuses every operation for want of ``docs:write``
    (403 insufficient_scope), whatever the token: the retry limit's case."""

    def __init__(self) -> None:
        import json
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.calls: list[tuple[str, str]] = []  # (JSON-RPC method, Authorization)
        guard = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                guard.calls.append((message.get("method"), self.headers.get("Authorization", "")))
                if message.get("method") == "initialize":
                    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {
                        "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "guard", "version": "1"}}})
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Mcp-Session-Id", "s1")
                elif "id" not in message:
                    body = ""
                    self.send_response(202)
                else:
                    body = json.dumps({"error": "insufficient_scope"})
                    self.send_response(403)
                    self.send_header("WWW-Authenticate", 'Bearer error="insufficient_scope", scope="docs:write"')
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *_args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/mcp"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_step_up_signs_in_for_more_scope_once_and_a_second_refusal_ends_the_request(tmp_path):
    """A 403 insufficient_scope: the bridge waits for a sign-in with the stored and the
    challenged scopes (here one under way in another projector, which holds the lock: none is
    started), sends the request again with its token, and the second 403 is the end: an error,
    never a third try."""
    guard = ScopeGuard()
    try:
        layout, env, state = unsigned(tmp_path, guard.url)
        tokenstore.write(state, "docs", tokenstore.Tokens(access_token="read-token", expires_at=None, scope="docs:read"))
        bridge = Raw(layout, "work/a", env=env)
        with tokenstore.locked(state, "docs", 5):  # another projector's sign-in, under way
            bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
            assert "result" in bridge.receive()
            deadline = time.monotonic() + 10
            while ("tools/list", "Bearer read-token") not in guard.calls and time.monotonic() < deadline:
                time.sleep(0.05)
            tokenstore.write(state, "docs", tokenstore.Tokens(access_token="write-token", expires_at=None,
                                                              scope="docs:read docs:write"))
        refused = bridge.receive(timeout=10)
        assert refused["id"] == 1
        assert "refused tools/list again for want of scope (docs:write) after a sign-in that asked for it" in refused["error"]["message"]
        assert [auth for method, auth in guard.calls if method == "tools/list"] == ["Bearer read-token", "Bearer write-token"]
        log = b"".join(bridge.stderr).decode()
        assert "asks for more scope for tools/list (docs:write): signing in again for docs:read docs:write" in log
        assert "read-token" not in log and "write-token" not in log
        bridge.close()
    finally:
        guard.close()
