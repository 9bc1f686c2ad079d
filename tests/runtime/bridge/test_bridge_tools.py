"""A folder's tool rule, enforced by the bridge: for a local server (run as the bridge's child)
and for a remote provider. The servers record what they receive: a hidden call never arrives."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import TOKEN
from mcp import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp.types import ListRootsResult, Root
from test_bridge import INIT, INITIALIZED, Raw, kbs_sent, with_client

MANY_TOOLS = Path(__file__).parents[2] / "servers" / "many_tools.py"


class Folders:
    """/a allows read_*, /b denies admin_* and write_1, /c says nothing (the provider's rule)."""

    def __init__(self, root: Path, page: int = 0, provider_rule: str = "{deny: [admin_0]}", shared: bool = False):
        self.root = root
        for folder in ("a/sub", "b", "c"):
            (root / folder).mkdir(parents=True, exist_ok=True)
        self.record = root / "record.jsonl"
        args = json.dumps([str(MANY_TOOLS), "--count", "60", "--page", str(page)])
        self.config = root / "projector.yaml"
        self.config.write_text(
            f"version: 1\nproviders:\n  many:\n    command: {sys.executable}\n    args: {args}\n"
            f"    env: {{MANY_TOOLS_RECORD: {self.record}}}\n    tools: {provider_rule}\n"
            + ("    shared: true\n    linger: 1\n" if shared else "")
            + f"bindings:\n  {root}/a:\n    many: {{tools: {{allow: ['read_*']}}}}\n"
            f"  {root}/b:\n    many: {{tools: {{deny: ['admin_*', write_1]}}}}\n  {root}/c:\n    many: {{}}\n"
        )
        self.env = {"HOME": str(root), "PATH": os.environ["PATH"]}

    def command(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "projector", "mcp", "--provider", "many", "--config", str(self.config), *extra]

    def received(self) -> list[dict]:
        return [json.loads(line) for line in self.record.read_text().splitlines()] if self.record.exists() else []

    def calls(self) -> list[str]:
        return [m["params"]["name"] for m in self.received() if m.get("method") == "tools/call"]


def session(folders: Folders, folder: str, *extra: str) -> Raw:
    raw = Raw(folders, folder, *extra)  # type: ignore[arg-type] - Raw needs command(), root and env
    raw.send(INIT)
    assert "result" in raw.receive()
    raw.send(INITIALIZED)
    return raw


def listed(raw: Raw, first_id: int = 1) -> tuple[list[str], list[dict]]:
    """Every page of tools/list: the names, and the pages' results."""
    names, pages, cursor, id_ = [], [], None, first_id
    while True:
        raw.send({"jsonrpc": "2.0", "id": id_, "method": "tools/list", "params": {"cursor": cursor} if cursor else {}})
        answer = raw.receive()
        assert answer["id"] == id_
        pages.append(answer["result"])
        names += [t["name"] for t in answer["result"]["tools"]]
        cursor, id_ = answer["result"].get("nextCursor"), id_ + 1
        if not cursor:
            return names, pages


def call(raw: Raw, id_: int, name: str) -> dict:
    raw.send({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": {"name": name, "arguments": {}}})
    return raw.receive()


def test_each_folder_is_offered_its_own_tools_of_a_local_server(tmp_path):
    folders = Folders(tmp_path)
    expect = {
        "a/sub": [f"read_{n}" for n in range(20)],
        "b": [f"read_{n}" for n in range(20)] + [f"write_{n}" for n in range(20) if n != 1],
        "c": [f"{k}_{n}" for k in ("read", "write", "admin") for n in range(20) if f"{k}_{n}" != "admin_0"],
    }
    for folder, names in expect.items():
        raw = session(folders, folder)
        assert listed(raw)[0] == names, folder
        raw.close()


def test_a_hidden_call_is_answered_by_the_bridge_and_never_reaches_the_server(tmp_path):
    folders = Folders(tmp_path)
    raw = session(folders, "a")
    refused = call(raw, 7, "write_3")
    assert refused == {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "Unknown tool: write_3"}}
    assert call(raw, 8, "read_3")["result"]["content"][0]["text"] == "called read_3"
    raw.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": ["read_1"]}})  # not a name at all
    assert raw.receive()["error"]["code"] == -32602
    assert raw.close() == 0
    assert folders.calls() == ["read_3"]


def test_a_hidden_call_in_disguise_never_reaches_the_server(tmp_path):
    """The call the bridge judged is the call the server reads: a name written twice (a parser
    that keeps the first would run it), a notification (no id: nothing to answer, nothing to
    send), a batch."""
    folders = Folders(tmp_path)
    raw = session(folders, "a")
    raw.send('{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "write_3", "name": "read_3", "arguments": {}}}')
    assert raw.receive()["result"]["content"][0]["text"] == "called read_3"  # the name the bridge judged, and only it
    raw.send({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "admin_1", "arguments": {}}})
    raw.send([{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "write_4"}},
              {"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "write_5"}}])
    assert raw.receive()["error"]["message"] == "Unknown tool: write_4"
    assert raw.close() == 0
    assert folders.calls() == ["read_3"]


def test_pages_are_filtered_one_by_one_and_an_emptied_page_keeps_its_cursor(tmp_path):
    folders = Folders(tmp_path, page=25)
    raw = session(folders, "a")
    names, pages = listed(raw)
    assert names == [f"read_{n}" for n in range(20)]
    assert [len(p["tools"]) for p in pages] == [20, 0, 0]  # 25 of 60 a page: the second and third hold no read_*
    assert [p.get("nextCursor") for p in pages] == ["25", "50", None]
    raw.close()


def test_list_changed_passes_and_the_next_list_is_filtered_again(tmp_path):
    folders = Folders(tmp_path)
    raw = session(folders, "a")
    assert "read_new" not in listed(raw)[0]
    raw.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": "grow"}})
    assert raw.receive()["error"]["message"] == "Unknown tool: grow"  # not read_*: refused, the server never grows
    raw.close()
    folders = Folders(tmp_path, provider_rule="{deny: [write_new]}")  # /c: the provider's rule
    raw = session(folders, "c")
    raw.send({"jsonrpc": "2.0", "id": 50, "method": "tools/call", "params": {"name": "grow"}})
    first, second = raw.receive(), raw.receive()
    assert first == {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert second["id"] == 50
    names = listed(raw, 60)[0]
    assert "read_new" in names and "write_new" not in names
    raw.close()


def test_show_hidden_marks_the_hidden_tools_and_still_refuses_their_calls(tmp_path):
    folders = Folders(tmp_path)
    raw = session(folders, "a", "--show-hidden")
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    tools = raw.receive()["result"]["tools"]
    assert len(tools) == 60
    hidden = [t["name"] for t in tools if (t.get("_meta") or {}).get("projector/hidden")]
    assert hidden == [f"{k}_{n}" for k in ("write", "admin") for n in range(20)]
    assert call(raw, 2, "admin_1")["error"]["message"] == "Unknown tool: admin_1"
    raw.close()
    assert folders.calls() == []


def test_a_shared_servers_host_filters_each_session_by_its_folder(tmp_path):
    folders = Folders(tmp_path, shared=True)
    (tmp_path / "a/other").mkdir()
    one, two = session(folders, "a/sub"), session(folders, "a/other")
    assert listed(one)[0] == listed(two)[0] == [f"read_{n}" for n in range(20)]
    assert call(one, 20, "admin_2")["error"]["message"] == "Unknown tool: admin_2"
    assert call(two, 21, "read_2")["result"]["content"][0]["text"] == "called read_2"
    one.close()
    two.close()
    assert folders.calls() == ["read_2"]
    from projector.runtime.host import attach

    for host in attach.hosts(folders.env):
        attach.stop(host["socket"])


def test_a_rule_too_large_to_hand_a_shared_host_runs_unshared_and_still_filters(tmp_path):
    many = "[" + ", ".join(f"never_a_tool_named_like_this_{n:05d}" for n in range(2500)) + ", 'admin_*']"
    folders = Folders(tmp_path, provider_rule=f"{{deny: {many}}}", shared=True)
    raw = session(folders, "c")
    assert len(listed(raw)[0]) == 40
    assert call(raw, 30, "admin_4")["error"]["message"] == "Unknown tool: admin_4"
    raw.close()
    assert b"runs unshared in this session: its tool rule is larger than" in b"".join(raw.stderr)
    assert folders.calls() == []


@pytest.fixture
def remote(kb_server, tmp_path):
    server = kb_server()
    config = tmp_path / "projector.yaml"
    (tmp_path / "a").mkdir()
    config.write_text(f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n"
                      f"bindings:\n  {tmp_path}/a:\n    docs: {{tools: {{deny: [big]}}}}\n")

    class Remote:
        root = tmp_path
        env = {"DOCS_TOKEN": TOKEN, "HOME": str(tmp_path), "PATH": os.environ["PATH"]}

        @staticmethod
        def command(*extra: str) -> list[str]:
            return [sys.executable, "-m", "projector", "mcp", "--provider", "docs", "--config", str(config), *extra]

    return server, Remote()


def test_a_remote_providers_tools_are_filtered_and_a_hidden_call_never_posted(remote):
    server, layout = remote
    raw = Raw(layout, "a")  # type: ignore[arg-type]
    raw.send(INIT)
    assert "result" in raw.receive()
    raw.send(INITIALIZED)
    raw.send({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
    names = [t["name"] for t in raw.receive()["result"]["tools"]]
    assert "search" in names and "big" not in names
    assert call(raw, 2, "big")["error"] == {"code": -32602, "message": "Unknown tool: big"}
    assert raw.close() == 0
    posted = [r["rpc"] for r in server.requests()]  # the server records each request's method, not its tool
    assert "tools/list" in posted and "tools/call" not in posted, "the hidden call was never posted"


# --------------------------------------------------------------------------- roots: a session over several folders


@pytest.fixture
def over_roots(kb_server, tmp_path):
    """An unbound folder whose client declares roots. The provider hides first_root; /a allows
    only first_root, /b only search, /c says no rule (the provider's), /off shows no KB."""
    server = kb_server()
    for folder in ("a", "b", "c", "off", "scratch"):
        (tmp_path / folder).mkdir()
    config = tmp_path / "projector.yaml"
    config.write_text(
        f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n"
        "    kbs: [handbook, api-a, api-b]\n    default: [handbook]\n    tools: {deny: [first_root]}\n"
        f"bindings:\n  {tmp_path}/a:\n    docs: {{kbs: [api-a], tools: {{allow: [first_root]}}}}\n"
        f"  {tmp_path}/b:\n    docs: {{kbs: [api-b], tools: {{allow: [search]}}}}\n"
        f"  {tmp_path}/c:\n    docs: [handbook]\n  {tmp_path}/off:\n    docs: []\n")
    command = [sys.executable, "-m", "projector", "mcp", "--provider", "docs", "--config", str(config)]
    params = StdioServerParameters(command=command[0], args=command[1:], cwd=str(tmp_path / "scratch"),
                                   env={"DOCS_TOKEN": TOKEN, "HOME": str(tmp_path), "PATH": os.environ["PATH"]})

    def offered(*roots: str, work=None):
        async def listing(_context):
            return ListRootsResult(roots=[Root(uri=f"file://{tmp_path}/{root}") for root in roots])

        async def names(client):
            return sorted(t.name for t in (await client.list_tools()).tools)

        return with_client(params, work or names, list_roots_callback=listing)

    return server, offered


@pytest.mark.parametrize(("roots", "offered"), [
    (("a", "b"), ["first_root", "search"]),  # each root's rule offers its own
    (("a", "c"), ["big", "first_root", "search"]),  # /c counts with the provider's rule
    (("a", "scratch"), ["first_root"]),  # an unbound root adds no KB, and no tool
    (("a", "off"), ["first_root"]),  # a root showing no KB offers no tool
])
def test_a_session_over_several_roots_is_offered_a_tool_any_roots_rule_offers(over_roots, roots, offered):
    _server, offered_over = over_roots
    assert offered_over(*roots) == offered


def test_over_roots_a_tool_no_roots_rule_offers_is_refused_and_never_posted(over_roots, tmp_path):
    server, offered_over = over_roots

    async def work(client):
        try:
            await client.call_tool("big", {})
        except MCPError as refused:
            said = (refused.error.code, refused.error.message)
        return said, (await client.call_tool("first_root", {})).content[0].text

    said, first = offered_over("a", "b", work=work)
    assert said == (-32602, "Unknown tool: big")
    assert first == f"file://{tmp_path}/a"
    assert [r["rpc"] for r in server.requests()].count("tools/call") == 1, "only first_root's call was posted"
    assert kbs_sent(server) == {"kbs=api-a,api-b"}
