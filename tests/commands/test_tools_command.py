"""`projector tools` and `explain`: the tools a folder is offered, through the bridge, and the rule's source."""

from __future__ import annotations

import json
import sys
from pathlib import Path

MANY_TOOLS = Path(__file__).parents[1] / "servers" / "many_tools.py"


def layout(sandbox) -> Path:
    (sandbox.home / "a").mkdir()
    (sandbox.home / "b").mkdir()
    return sandbox.model(
        f"version: 1\nproviders:\n  many:\n    command: {sys.executable}\n    args: [{MANY_TOOLS}, --count, '9', --page, '4']\n"
        f"    tools: {{deny: ['admin_*']}}\nbindings:\n  ~/a:\n    many: {{tools: {{allow: ['read_*', write_1]}}}}\n"
    )


def test_tools_lists_what_each_folder_is_offered_and_all_marks_the_hidden(sandbox):
    config = layout(sandbox)
    here = sandbox.run("tools", str(sandbox.home / "a"), config=config)
    assert here.returncode == 0, here.stderr
    assert here.stdout.splitlines() == [
        "many: 4 tools offered — rule {allow: [read_*, write_1]} from binding ~/a",
        "  read_0", "  read_1", "  read_2", "  write_1",
    ]
    every = json.loads(sandbox.run("tools", str(sandbox.home / "b"), "--all", "--json", config=config).stdout)
    (many,) = every["providers"]
    assert (many["rule"], many["from"]) == ("{deny: [admin_*]}", "provider many")
    assert [t["name"] for t in many["tools"] if t["hidden"]] == ["admin_0", "admin_1", "admin_2"]
    assert len(many["tools"]) == 9  # all three pages (four tools a page) were asked for


def test_tools_names_an_unknown_provider(sandbox):
    done = sandbox.run("tools", "--provider", "nope", config=layout(sandbox))
    assert done.returncode == 2 and 'no provider "nope"' in done.stderr


def test_explain_shows_the_rule_and_where_it_came_from(sandbox):
    config = layout(sandbox)
    shown = sandbox.run("explain", "--verbose", str(sandbox.home / "a"), config=config).stdout
    assert "  tools: {allow: [read_*, write_1]} — from binding ~/a" in shown.splitlines()
    summary = sandbox.run("explain", str(sandbox.home / "a"), config=config).stdout  # the rule on the provider's one line
    assert any(line.startswith("provider ") and line.endswith("; tools: {allow: [read_*, write_1]}") for line in summary.splitlines()), summary
    report = json.loads(sandbox.run("explain", str(sandbox.home / "b"), "--json", config=config).stdout)
    (many,) = report["providers"]
    assert many["tools"] == {"allow": None, "deny": ["admin_*"], "shown": "{deny: [admin_*]}", "from": "provider many"}


def test_tools_with_roots_lists_what_a_client_declaring_them_is_offered(sandbox, tmp_path):
    from servers import TOKEN, KbServer

    server = KbServer(tmp_path, "stateful", None, "handbook,api-a,api-b", ())
    try:
        for folder in ("a", "b", "scratch"):
            (sandbox.home / folder).mkdir()
        sandbox.env["DOCS_TOKEN"] = TOKEN
        config = sandbox.model(
            f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n    tools: {{deny: [first_root]}}\n"
            "bindings:\n  ~/a:\n    docs: {kbs: [api-a], tools: {allow: [first_root]}}\n"
            "  ~/b:\n    docs: {kbs: [api-b], tools: {allow: [search]}}\n")
        roots = ("--root", str(sandbox.home / "a"), "--root", str(sandbox.home / "b"))
        done = sandbox.run("tools", str(sandbox.home / "scratch"), *roots, config=config)
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == [
            "docs: 2 tools offered — rule any of {allow: [first_root]}, {allow: [search]} from roots ~/a, ~/b",
            "  search", "  first_root",
        ]
        alone = sandbox.run("tools", str(sandbox.home / "scratch"), config=config).stdout.splitlines()
        assert alone == ["docs: 2 tools offered — rule {deny: [first_root]} from provider docs", "  search", "  big"]
    finally:
        server.stop()


def test_explain_says_an_unbound_folders_bridge_follows_a_clients_roots(sandbox):
    (sandbox.home / "a").mkdir()
    sandbox.install_projector()  # the bridge's entry, which the roots concern
    config = sandbox.model("version: 1\nproviders:\n  docs:\n    url: https://kb.example/mcp\n    tools: {deny: [big]}\n    default: [handbook]\n"
                           "bindings:\n  ~/a:\n    docs: {kbs: [api], tools: {allow: [search]}}\n")
    note = "  a client declaring roots gets their bindings' KBs, and a tool any of their rules offers (projector tools --root)"
    assert note in sandbox.run("explain", "--verbose", str(sandbox.home), config=config).stdout.splitlines()
    assert note not in sandbox.run("explain", "--verbose", str(sandbox.home / "a"), config=config).stdout.splitlines()
    summary = sandbox.run("explain", str(sandbox.home), config=config).stdout.splitlines()
    assert "provider docs: handbook — no binding: the provider's default; tools: {deny: [big]}; a client's roots: their KBs and tools" in summary
    assert json.loads(sandbox.run("explain", str(sandbox.home), "--json", config=config).stdout)["providers"][0]["follows_roots"] is True
