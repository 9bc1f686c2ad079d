"""The bridge, driven over stdio by the official MCP Python client and by a raw driver, against
a routed KB server on loopback that records every HTTP request it gets."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from conftest import TOKEN
from mcp import Client, StdioServerParameters
from mcp.types import ListRootsResult, Root

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class Layout:
    """Folders and a model: /work/a bound, /work/a/vendor bound to none, /work/a/deep to api-b."""

    def __init__(self, root: Path, url: str, default: str = "default: [handbook]", settings: str = ""):
        self.root = root
        for folder in ("work/a/sub", "work/a/vendor", "work/a/deep", "work/b", "scratch"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        self.config = root / "projector.yaml"
        self.config.write_text(
            f"version: 1\nproviders:\n  docs:\n    url: {url}\n    token_env: DOCS_TOKEN\n"
            f"    kbs: [handbook, api-a, api-b]\n    {default}\n{settings}"
            f"bindings:\n  {root}/work/a:\n    docs: [api-a, handbook]\n  {root}/work/a/vendor:\n    docs: []\n"
            f"  {root}/work/a/deep:\n    docs: [api-b]\n  {root}/work/b:\n    docs: [api-b]\n"
        )
        self.env = {"DOCS_TOKEN": TOKEN, "HOME": str(root), "PATH": os.environ["PATH"]}

    def command(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "projector", "mcp", "--provider", "docs", "--config", str(self.config), *extra]

    def params(self, folder: str, *extra: str) -> StdioServerParameters:
        return StdioServerParameters(command=self.command()[0], args=self.command(*extra)[1:], env=self.env, cwd=str(self.root / folder))


class Raw:
    """The bridge as a subprocess, spoken to line by line."""

    def __init__(self, layout: Layout, folder: str, *extra: str, env: dict | None = None):
        self.process = subprocess.Popen(layout.command(*extra), cwd=layout.root / folder, env=env or layout.env,
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue = queue.Queue()
        self.stderr: list[bytes] = []
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.process.stderr), daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, *messages: dict | str) -> None:
        for message in messages:
            data = message if isinstance(message, str) else json.dumps(message)
            self.process.stdin.write(data.encode() + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 15) -> dict:
        line = self.lines.get(timeout=timeout)
        assert line is not None, "the bridge closed stdout"
        return json.loads(line)

    def close(self, timeout: float = 15) -> int:
        self.process.stdin.close()
        return self.process.wait(timeout=timeout)


def initializing(command: list[str], cwd: Path, env: dict) -> subprocess.Popen:
    """A bridge sent initialize, whose input stays open until ``initialize_answer`` has its answer."""
    bridge = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    bridge.stdin.write((json.dumps(INIT) + "\n").encode())
    bridge.stdin.flush()
    return bridge


def initialize_answer(bridge: subprocess.Popen, timeout: float = 90) -> tuple[dict, str]:
    """``initializing``'s bridge's answer, and its stderr once it has ended: its input ends when
    the answer has come, not before. A bridge whose input ends gives replies in flight DRAIN (5 s)
    more; twenty bridges that start at once and queue for one renewal take longer than that on a
    loaded 2-core machine ("the session ended before the provider answered")."""
    import select

    deadline, first = time.monotonic() + timeout, b""
    while not first.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([bridge.stdout], [], [], left)[0]:
            bridge.kill()
            break
        chunk = os.read(bridge.stdout.fileno(), 65536)
        if not chunk:
            break
        first += chunk
    bridge.stdin.close()
    bridge.stdin = None
    out, err = bridge.communicate(timeout=max(deadline - time.monotonic(), 15))
    lines = (first + out).decode().splitlines()
    assert lines, f"the bridge answered nothing (within {timeout:g} s); its stderr:\n{err.decode()[-2000:]}"
    return json.loads(lines[0]), err.decode()


def with_client(params: StdioServerParameters, work, **options):
    async def run():
        async with Client(params, **options) as client:
            return await work(client)

    return asyncio.run(run())


def kbs_sent(server) -> set[str]:
    return {r["query"] for r in server.requests()}


# --------------------------------------------------------------------------- where am I


def test_bound_folder_shows_its_kbs_with_the_official_client(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)

    async def work(client):
        tools = await client.list_tools()
        called = await client.call_tool("search", {"query": "q", "kb": "api-a"})
        return {t.name: sorted(t.input_schema["properties"]) for t in tools.tools}, called.content[0].text

    tools, text = with_client(layout.params("work/a/sub"), work)
    assert tools["search"] == ["kb", "query"] and text == "api-a: found q"
    assert kbs_sent(server) == {"kbs=api-a,handbook"}
    requests = server.requests()
    assert [r["rpc"] or r["method"] for r in requests] == ["initialize", "notifications/initialized", "tools/list", "tools/call", "DELETE"]
    assert requests[0]["session"] is None and requests[0]["version"] is None
    assert all(r["session"] == requests[1]["session"] and r["version"] == "2025-11-25" for r in requests[1:])
    assert all(r["auth"] == f"Bearer {TOKEN}" and r["method"] != "GET" for r in requests)


@pytest.mark.parametrize(("folder", "query"), [("work/a/deep", "kbs=api-b"), ("work/b", "kbs=api-b"), ("scratch", "kbs=handbook")])
def test_deepest_binding_wins_and_unbound_uses_the_default(kb_server, tmp_path, folder, query):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    with_client(layout.params(folder), lambda c: c.list_tools())
    assert kbs_sent(server) == {query}


def test_unbound_without_default_sends_no_kbs_at_all(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url, default="description: no default")
    tools = with_client(layout.params("scratch"), lambda c: c.list_tools())
    assert kbs_sent(server) == {""}  # every KB: no parameter, never an empty kbs=
    assert any(t.name == "search" for t in tools.tools)


def test_a_symlinked_folder_is_the_folder_it_points_to(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    (tmp_path / "link").symlink_to(tmp_path / "work" / "b")
    with_client(layout.params("link"), lambda c: c.list_tools())
    assert kbs_sent(server) == {"kbs=api-b"}


@pytest.mark.parametrize(("folder", "extra"), [("work/a/vendor", ()), ("work/a", ("--no-kb",))])
def test_an_empty_set_is_answered_locally_with_no_connection(kb_server, tmp_path, folder, extra):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, folder, *extra)
    bridge.send(INIT)
    init = bridge.receive()["result"]
    assert init["capabilities"] == {"tools": {"listChanged": False}} and init["serverInfo"]["name"] == "projector"
    bridge.send(INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"},
                {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": {}}},
                {"jsonrpc": "2.0", "id": 4, "method": "resources/list"},
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
    answers = [bridge.receive() for _ in range(4)]
    assert answers[0]["result"] == {"tools": []} and answers[1]["result"] == {}
    assert answers[2]["error"]["code"] == -32602 and answers[3]["error"]["code"] == -32601
    assert bridge.close() == 0
    assert server.requests() == [], "no socket was opened"


# --------------------------------------------------------------------------- roots


def test_unbound_folder_asks_for_roots_and_uses_the_union_of_their_bindings(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    asked = []

    async def roots(_context):
        asked.append(1)
        return ListRootsResult(roots=[Root(uri=f"file://{tmp_path}/work/a"), Root(uri=f"file://{tmp_path}/work/b")])

    async def work(client):
        return client.instructions, await client.list_tools()

    instructions, tools = with_client(layout.params("scratch"), work, list_roots_callback=roots)
    assert asked == [1] and any(t.name == "search" for t in tools.tools)
    assert instructions and "api" not in instructions and "handbook" not in instructions
    assert kbs_sent(server) == {"kbs=api-a,handbook,api-b"}
    requests = server.requests()
    assert requests[0]["rpc"] == "initialize" and requests[0]["id"] == "projector-init-1"


def test_roots_wait_queues_requests_in_order_and_answers_ping_at_once(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "scratch")
    bridge.send(dict(INIT, params=dict(INIT["params"], capabilities={"roots": {}})))
    assert bridge.receive()["result"]["serverInfo"]["name"] == "projector"
    bridge.send(INITIALIZED)
    roots_request = bridge.receive()
    assert roots_request["method"] == "roots/list" and roots_request["id"] == "projector-roots-1"
    bridge.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"})
    assert bridge.receive() == {"jsonrpc": "2.0", "id": 2, "result": {}}, "ping is answered while waiting"
    assert server.requests() == [], "nothing goes up before the roots are known"
    bridge.send({"jsonrpc": "2.0", "id": "projector-roots-1", "result": {"roots": [{"uri": f"file://{tmp_path}/work/b"}]}})
    assert [t["name"] for t in bridge.receive()["result"]["tools"]] == ["search", "big", "first_root"]
    assert bridge.close() == 0
    assert kbs_sent(server) == {"kbs=api-b"}


def test_roots_that_bind_nothing_fall_back_to_the_default_and_an_empty_default_stays_local(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url, default="default: []")
    bridge = Raw(layout, "scratch")
    bridge.send(dict(INIT, params=dict(INIT["params"], capabilities={"roots": {"listChanged": True}})), INITIALIZED)
    bridge.receive(), bridge.receive()
    odd = [{"uri": "file:///nowhere"}, {"uri": "file://d:\\dev"}, {"uri": "vscode-remote://wsl%2Bubuntu/home"}, {"name": "no uri"}, "x"]
    bridge.send({"jsonrpc": "2.0", "id": "projector-roots-1", "result": {"roots": odd}},
                {"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert bridge.receive() == {"jsonrpc": "2.0", "id": 5, "result": {"tools": []}}
    assert bridge.close() == 0
    assert server.requests() == []


def test_server_requests_inside_a_stream_reach_the_client_with_ids_of_their_own(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)

    async def roots(_context):
        return ListRootsResult(roots=[Root(uri=f"file://{tmp_path}/work/a")])

    async def work(client):
        return (await client.call_tool("first_root", {})).content[0].text

    assert with_client(layout.params("work/a"), work, list_roots_callback=roots) == f"file://{tmp_path}/work/a"


# --------------------------------------------------------------------------- protocol edges


def test_discover_id_zero_bad_lines_and_a_10_mb_message(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a")
    bridge.send({"jsonrpc": "2.0", "id": 7, "method": "server/discover"})
    assert bridge.receive()["error"]["code"] == -32601
    bridge.send(INIT)
    assert bridge.receive()["id"] == 0
    bridge.send(INITIALIZED, "this is not json", "\xff\xfe broken")
    assert bridge.receive()["error"]["code"] == -32700
    assert bridge.receive()["error"]["code"] == -32700
    size = 10 * 1024 * 1024
    bridge.send({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "big", "arguments": {"size": size}}})
    answer = bridge.receive(timeout=60)
    assert answer["id"] == 8 and len(answer["result"]["content"][0]["text"]) == size
    assert bridge.close() == 0


def test_stdout_stays_pure_under_a_stderr_flood(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a/vendor")
    bridge.send(INIT)
    bridge.receive()
    for n in range(2000):  # each unknown reply makes the bridge log a line on stderr
        bridge.send({"jsonrpc": "2.0", "id": f"stray-{n}", "result": {}}, {"jsonrpc": "2.0", "id": n, "method": "ping"})
    answers = [bridge.receive() for _ in range(2000)]
    assert [a["id"] for a in answers] == list(range(2000))
    assert bridge.close() == 0
    assert sum(b"dropped a reply" in line for line in bridge.stderr) == 2000


@pytest.mark.parametrize("how", ["eof", signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_the_session_is_deleted_on_exit(kb_server, tmp_path, how):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    bridge.receive(), bridge.receive()
    if how == "eof":
        code = bridge.close()
    else:
        bridge.process.send_signal(how)
        code = bridge.process.wait(timeout=15)
    assert code == 0
    requests = server.requests()
    assert requests[-1]["method"] == "DELETE" and requests[-1]["session"] == requests[1]["session"]


def test_a_stateless_server_gets_no_delete(kb_server, tmp_path):
    server = kb_server(mode="stateless")
    layout = Layout(tmp_path, server.url)
    with_client(layout.params("work/a"), lambda c: c.list_tools())
    assert [r["method"] for r in server.requests()].count("DELETE") == 0


def test_an_expired_session_is_opened_again_once(kb_server, tmp_path):
    server = kb_server(idle=1)
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED, {"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    bridge.receive(), bridge.receive()
    time.sleep(2.5)  # the server forgets the session
    bridge.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "q", "kb": "api-a"}}})
    assert bridge.receive()["result"]["content"][0]["text"] == "api-a: found q"
    assert bridge.close() == 0
    requests = server.requests()
    initializes = [r for r in requests if r["rpc"] == "initialize"]
    assert len(initializes) == 2 and initializes[1]["session"] is None and initializes[1]["id"] == "projector-reinit-1"
    assert requests[-1]["method"] == "DELETE" and requests[-1]["session"] != requests[1]["session"]


def test_upstream_down_is_an_answer_not_a_hang(tmp_path):
    from conftest import refused_port

    with refused_port() as port:
        layout = Layout(tmp_path, f"http://127.0.0.1:{port}/mcp")
        bridge = Raw(layout, "work/a")
        bridge.send(INIT)
        answer = bridge.receive()
    assert answer["id"] == 0 and "cannot reach the provider at http://127.0.0.1" in answer["error"]["message"]
    assert bridge.close() == 0


def test_a_refused_token_names_the_variable_not_the_value(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a", env=dict(layout.env, DOCS_TOKEN="wrong-secret\n"))
    bridge.send(INIT)
    message = bridge.receive()["error"]["message"]
    assert "refused the token (HTTP 401); check $DOCS_TOKEN" in message
    assert bridge.close() == 0
    assert b"wrong-secret" not in b"".join(bridge.stderr) and "wrong-secret" not in message


def test_usage_errors_go_to_stderr_with_exit_2(tmp_path):
    for argv in ([], ["--provider"], ["--provider", "docs", "--bogus"]):
        done = subprocess.run([sys.executable, "-m", "projector", "mcp", *argv], capture_output=True, text=True, timeout=30)
        assert done.returncode == 2 and done.stdout == "" and "usage: projector mcp --provider NAME" in done.stderr


def test_a_provider_missing_from_the_model_is_said_on_stderr(kb_server, tmp_path):
    layout = Layout(tmp_path, "http://127.0.0.1:9/mcp")
    done = subprocess.run([sys.executable, "-m", "projector", "mcp", "--provider", "nope", "--config", str(layout.config)],
                          capture_output=True, text=True, timeout=30, env=layout.env, input="")
    assert done.returncode == 2 and done.stdout == "" and 'no provider "nope"' in done.stderr


def test_a_reply_in_flight_is_still_delivered_after_stdin_closes(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    bridge = Raw(layout, "work/a")
    bridge.send(INIT, INITIALIZED)
    bridge.receive()
    bridge.send({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "big", "arguments": {"size": 2_000_000}}})
    bridge.process.stdin.close()  # the client goes away right after asking
    assert len(bridge.receive()["result"]["content"][0]["text"]) == 2_000_000
    assert bridge.process.wait(timeout=15) == 0
    assert server.requests()[-1]["method"] == "DELETE"


def test_a_closed_stdout_ends_the_session(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    process = subprocess.Popen(layout.command(), cwd=tmp_path / "work" / "a", env=layout.env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    process.stdin.write((json.dumps(INIT) + "\n" + json.dumps(INITIALIZED) + "\n").encode())
    process.stdin.flush()
    assert "result" in json.loads(process.stdout.readline())
    process.stdout.close()  # the client stops reading
    process.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n')
    process.stdin.flush()
    assert process.wait(timeout=15) == 0
    assert server.requests()[-1]["method"] == "DELETE"


def test_the_trailing_slash_redirect_is_followed(kb_server, tmp_path):
    server = kb_server()
    layout = Layout(tmp_path, server.url + "/")
    tools = with_client(layout.params("work/a"), lambda c: c.list_tools())
    assert any(t.name == "search" for t in tools.tools)
    assert {r["path"] for r in server.requests()} == {"/mcp/", "/mcp"}


def test_http_proxy_and_no_proxy_are_honoured(kb_server, tmp_path):
    import http.server

    seen = []

    class Proxy(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's naming
            seen.append(self.path)
            self.send_response(502)
            self.end_headers()

        def log_message(self, *args):
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    server = kb_server()
    layout = Layout(tmp_path, server.url)
    proxied = dict(layout.env, HTTP_PROXY=f"http://127.0.0.1:{proxy.server_address[1]}", NO_PROXY="")
    bridge = Raw(layout, "work/a", env=proxied)
    bridge.send(INIT)
    assert "HTTP 502" in bridge.receive()["error"]["message"]
    bridge.close()
    assert seen == [server.url + "?kbs=api-a,handbook"] and server.requests() == []
    direct = Raw(layout, "work/a", env=dict(proxied, NO_PROXY="127.0.0.1"))
    direct.send(INIT)
    assert "result" in direct.receive()
    direct.close()
    proxy.shutdown()


def test_a_broken_model_is_a_clear_line_on_stderr(tmp_path):
    layout = Layout(tmp_path, "http://127.0.0.1:9/mcp")
    layout.config.write_text("version: 1\nproviders:\n  docs:\n    urll: x\n")
    done = subprocess.run(layout.command(), capture_output=True, text=True, timeout=30, env=layout.env, input="", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "projector.yaml:4:5: providers.docs.urll: unknown key" in done.stderr and "Traceback" not in done.stderr
