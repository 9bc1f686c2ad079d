"""A session that starts with no sign-in (runtime.bridge.signing): answered by the bridge with no
tools, a tool call that says what to run, and the provider's tools once a sign-in writes a token,
announced with tools/list_changed. The conformance suite's authorization server plays the whole
sign-in the bridge starts itself (test_peers.py); here the person signs in by hand, with no
browser the bridge could open (no display, no $BROWSER)."""

from __future__ import annotations

import os

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
