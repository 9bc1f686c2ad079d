"""A provider's tool rule read back by each client's own parser: its own filter where its
descriptor says it has one that can say the rule, else the bridge's stdio entry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_real_clients import Home, _tools  # noqa: E402, F401 (puts the npm tools' helpers on the path; the fixture skips without them)

import real  # noqa: E402

PROVIDER = "version: 1\nproviders:\n  docs:\n    url: http://127.0.0.1:9/mcp\n    tools: {rule}\n"
EXACT = "{allow: [read_file, search, drop], deny: [drop]}"
DENY = "{deny: [delete_page]}"
GLOB = "{allow: ['read_*']}"


def codex_filter(home: Home) -> dict:
    shown = json.loads(real._ok(real.run(home.home, home.root, [real._bin("codex"), "mcp", "get", "docs", "--json"])))
    return {key: shown.get(key) for key in ("enabled_tools", "disabled_tools")}


def copilot_filter(home: Home) -> dict:
    shown = json.loads(real._ok(real.run(home.home, home.root, [real._bin("copilot"), "mcp", "list", "--json"])))["mcpServers"]["docs"]
    return {key: shown.get(key) for key in ("tools", "excludeTools")}


@pytest.mark.parametrize(("client", "read", "rule", "expected"), [
    ("codex", codex_filter, EXACT, {"enabled_tools": ["read_file", "search"], "disabled_tools": None}),
    ("codex", codex_filter, DENY, {"enabled_tools": None, "disabled_tools": ["delete_page"]}),
    ("copilot", copilot_filter, EXACT, {"tools": ["read_file", "search"], "excludeTools": None}),
    ("copilot", copilot_filter, DENY, {"tools": ["*"], "excludeTools": ["delete_page"]}),
])
def test_the_clients_own_parser_reads_the_rule_in_its_own_filter(client, read, rule, expected, tmp_path):
    home = Home(tmp_path, client)
    home.sync(PROVIDER.format(rule=rule))
    assert home.read()["docs"]["transport"] == "http"
    assert read(home) == expected


@pytest.mark.parametrize("client", ["codex", "copilot", "claude-code", "opencode", "amp"])
def test_a_rule_the_client_cannot_say_is_the_bridge_as_its_parser_reads_it(client, tmp_path):
    home = Home(tmp_path, client)
    home.sync(PROVIDER.format(rule=GLOB if client in ("codex", "copilot") else EXACT))
    entry = home.read()["docs"]
    assert entry["transport"] == "stdio" and entry["args"][:3] == ["mcp", "--provider", "docs"]
