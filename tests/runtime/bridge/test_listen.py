"""Server requests outside any client request (issue 14, part 4): the provider's ``listen``
setting opens the standalone GET stream; whatever it says, no request waits forever."""

from __future__ import annotations

import time

import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import ListRootsResult, Root
from test_bridge import INIT, INITIALIZED, Layout, Raw, with_client


@pytest.mark.parametrize("listen", [True, False])
def test_a_tool_that_asks_for_roots_on_the_session_channel(kb_server, tmp_path, listen):
    """The official SDK's ``ctx.session.list_roots()`` (MCPServer, FastMCP's name in mcp 2) sends
    roots/list on the GET stream: with ``listen`` the call completes; without, it ends with the
    timeout's error, which says what to do."""
    server = kb_server(options=("--session-roots",))
    layout = Layout(tmp_path, server.url, settings=f"    listen: {str(listen).lower()}\n    timeout: 3\n")

    async def roots(_context):
        return ListRootsResult(roots=[Root(uri=f"file://{tmp_path}/work/a")])

    async def work(client):
        return (await client.call_tool("session_roots", {})).content[0].text

    if listen:
        assert with_client(layout.params("work/a"), work, list_roots_callback=roots) == f"file://{tmp_path}/work/a"
        gets = [r for r in server.requests() if r["method"] == "GET"]
        assert gets and all(r["query"] == "kbs=api-a,handbook" and r["session"] for r in gets)
    else:
        with pytest.raises(BaseException) as failure:
            with_client(layout.params("work/a"), work, list_roots_callback=roots)
        error = failure.value
        while isinstance(error, BaseExceptionGroup):  # anyio wraps it
            error = error.exceptions[0]
        assert isinstance(error, MCPError)
        message = str(error)
        assert "did not answer tools/call within 3 s" in message and "`listen: true` for provider docs" in message
        assert "GET" not in {r["method"] for r in server.requests()}
        cancelled = [r for r in server.requests() if r["rpc"] == "notifications/cancelled"]
        assert len(cancelled) == 1, "the provider is told the request was given up"


def test_a_server_without_a_stream_of_its_own_is_fine(kb_server, tmp_path):
    server = kb_server(mode="stateless")  # GET answers 405
    layout = Layout(tmp_path, server.url, settings="    listen: true\n")
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    bridge.receive()
    assert "tools" in bridge.receive()["result"]
    assert bridge.close() == 0
    assert [r["method"] for r in server.requests()].count("GET") == 1
    assert b"listening" not in b"".join(bridge.stderr)


def test_the_listening_stream_is_relayed_and_resumed_from_its_last_event(faulty, tmp_path):
    server = faulty("listen-drop")
    bridge = Raw(Layout(tmp_path, server.url, settings="    listen: true\n"), "work/a")
    bridge.send(INIT, INITIALIZED)
    bridge.receive()
    assert bridge.receive() == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    asked = bridge.receive()
    assert asked["method"] == "roots/list" and asked["id"] == "u-1", "the server's id (7) is not the client's to see"
    bridge.send({"jsonrpc": "2.0", "id": "u-1", "result": {"roots": []}})
    bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert bridge.receive()["id"] == 1
    assert bridge.close() == 0
    gets = [r["last_event_id"] for r in server.requests if r["method"] == "GET"]
    assert gets == [None, "s1"]
    answers = [r for r in server.requests if r["method"] == "POST" and r["rpc"] is None and r["id"] == 7]
    assert len(answers) == 1, "the client's answer went up with the server's own id"


def test_each_request_has_its_own_time(kb_server, tmp_path):
    """Two requests that hang, sent a second apart, each time out after its own `timeout` (one
    alarm serves all requests: it must re-arm for the next one, not fire them together); a
    request answered meanwhile is not disturbed."""
    server = kb_server(options=("--session-roots",))
    bridge = Raw(Layout(tmp_path, server.url, settings="    timeout: 2\n"), "work/a")
    bridge.send(INIT, INITIALIZED)
    bridge.receive()
    hang = {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "session_roots", "arguments": {}}}
    started = time.monotonic()
    bridge.send(dict(hang, id="first"))
    time.sleep(1.0)
    bridge.send(dict(hang, id="second"), {"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    arrivals = {}
    for _ in range(3):
        answer = bridge.receive()
        arrivals[answer["id"]] = (time.monotonic() - started, answer)
    assert "result" in arrivals["list"][1] and arrivals["list"][0] < 1.9
    assert "within 2 s" in arrivals["first"][1]["error"]["message"] and 1.9 < arrivals["first"][0] < 2.9
    assert "within 2 s" in arrivals["second"][1]["error"]["message"] and arrivals["second"][0] > 2.9
    assert bridge.close() == 0
