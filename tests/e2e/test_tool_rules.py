"""Tools per folder with real clients (Claude Code, Codex, Gemini, Qwen): a sixty-tool server
(tests/servers/many_tools.py) whose folders allow different tools. The client in folder A is
offered exactly A's tools, in B B's; a call the model makes of a hidden tool fails and never
reaches the server (it records what it receives)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import Desk

MANY_TOOLS = Path(__file__).parents[1] / "servers" / "many_tools.py"
CLIENTS = ["claude-code", "codex", "gemini", "qwen"]


def ruled(desk: Desk) -> tuple[Path, Path, Path]:
    """Folders A (read_* only) and B (no admin_*, no write_1), the model synced; and the record."""
    a, b = desk.home / "work" / "a", desk.home / "work" / "b"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    record = desk.root / "many-record.jsonl"
    desk.model_path.parent.mkdir(parents=True, exist_ok=True)
    desk.model_path.write_text(
        f"version: 1\nclients: [{desk.client}]\nproviders:\n  many:\n    command: {sys.executable}\n"
        f"    args: [{MANY_TOOLS}, --count, '60']\n    env: {{MANY_TOOLS_RECORD: {record}}}\n"
        f"bindings:\n  {a}:\n    many: {{tools: {{allow: ['read_*']}}}}\n"
        f"  {b}:\n    many: {{tools: {{deny: ['admin_*', write_1]}}}}\n")
    desk.projector("sync")
    return a, b, record


def calls(record: Path) -> list[str]:
    lines = record.read_text().splitlines() if record.exists() else []
    return [m["params"]["name"] for m in map(json.loads, lines) if m.get("method") == "tools/call"]


@pytest.mark.parametrize("client", CLIENTS)
def test_each_folder_is_offered_exactly_its_tools_of_a_sixty_tool_server(desk):
    a, b, record = ruled(desk)
    run = desk.drive(a, call="read_3")
    assert sorted(run.tools("many")) == sorted(f"read_{n}" for n in range(20)), run.summary()
    assert any("called read_3" in text for text in run.results), run.summary()
    run = desk.drive(b)
    assert sorted(run.tools("many")) == sorted([f"read_{n}" for n in range(20)] + [f"write_{n}" for n in range(20) if n != 1]), run.summary()
    assert calls(record) == ["read_3"]


@pytest.mark.parametrize("client", CLIENTS)
def test_a_models_call_of_a_hidden_tool_fails_and_never_reaches_the_server(desk):
    a, _, record = ruled(desk)
    desk.api.force = f"{_prefix(desk)}write_3"
    run = desk.drive(a)
    desk.api.force = None
    assert "write_3" not in run.tools("many"), run.summary()
    assert run.results and not any("called write_3" in text for text in run.results), run.summary()
    assert calls(record) == []


def _prefix(desk: Desk) -> str:
    import drivers

    return drivers.DRIVERS[desk.client].prefix.format(server="many")


@pytest.mark.parametrize("client", ["codex", "gemini", "qwen", "copilot", "claude-code", "opencode"])
def test_an_unbound_providers_rule_hides_its_tools_by_the_clients_own_filter_or_the_bridge(desk):
    """Codex, Gemini, Qwen and Copilot get the plain HTTP entry with their own filter's key;
    Claude Code and OpenCode, which have none, get the bridge. Each is offered the same tools."""
    desk.model_path.parent.mkdir(parents=True, exist_ok=True)
    desk.model_path.write_text(f"version: 1\nclients: [{desk.client}]\nproviders:\n  docs:\n    url: {desk.kb.url}?desk={desk.tag}\n"
                               "    token_env: DOCS_TOKEN\n    default: [handbook]\n    tools: {deny: [big]}\n")
    desk.projector("sync")
    run = desk.drive(desk.scratch)
    assert set(run.tools("docs")) == {"search", "first_root"}, run.summary()
    bridged = any(provider == "docs" for _, provider in desk.bridges())
    assert bridged == (desk.client in ("claude-code", "opencode"))
