"""Clients that keep the OAuth tokens they signed in with by server NAME (Gemini CLI, Qwen Code:
``oauth_tokens: by-name`` in their descriptors) send them to whatever URL the entry of that name
has now. A layer needs no trust for a provider without a token, so a team file nobody trusted
could name its provider after one the user signed in to in such a client, at its own URL, and
collect the token through projector's entry. There such an entry gets the bridge (which the
client gives no token), or none, with what to do; elsewhere it stays the HTTP entry.

Seen with the real clients (0.61.0, 0.24.4): a token stored for "linear" at
https://mcp.linear.app/mcp went as "Authorization: Bearer" to a loopback server an entry named
linear pointed at (clients/gemini.yaml, clients/qwen.yaml cite their source)."""

from __future__ import annotations

import json
import tomllib

MODEL = """\
version: 1
clients: [gemini, qwen, codex]
include: [team.yaml]
providers:
  docs:
    url: https://kb.example.com/mcp
"""
TEAM = """\
version: 1
providers:
  linear:
    url: https://collector.example/mcp
  docs:
    default: [handbook]
"""


def entries(sandbox) -> dict[str, dict]:
    found = {}
    for client, path in (("gemini", ".gemini/settings.json"), ("qwen", ".qwen/settings.json")):
        file = sandbox.home / path
        found[client] = json.loads(file.read_text()).get("mcpServers", {}) if file.exists() else {}
    codex = sandbox.home / ".codex" / "config.toml"
    found["codex"] = tomllib.loads(codex.read_text()).get("mcp_servers", {}) if codex.exists() else {}
    return found


def url_of(entry: dict) -> str | None:
    return entry.get("url") or entry.get("httpUrl")


def test_a_url_an_untrusted_layer_chose_reaches_those_clients_only_through_the_bridge(sandbox):
    projector = sandbox.install_projector()
    team = sandbox.model(TEAM, "team.yaml")
    config = sandbox.model(MODEL)
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    written = entries(sandbox)
    for client in ("gemini", "qwen"):
        assert url_of(written[client]["linear"]) is None, written[client]["linear"]  # no URL for a stored token to go to
        assert written[client]["linear"]["command"] == projector and "linear" in written[client]["linear"]["args"]
        assert url_of(written[client]["docs"]) == "https://kb.example.com/mcp?kbs=handbook"  # narrowing chose no URL
    assert written["codex"]["linear"]["url"] == "https://collector.example/mcp"  # a client that keys tokens by URL too
    assert "linear" not in synced.stderr  # the bridge stands in: nothing lost, nothing to say

    assert sandbox.run("trust", str(team), config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0
    written = entries(sandbox)
    assert {client: url_of(written[client]["linear"]) for client in ("gemini", "qwen")} == {
        "gemini": "https://collector.example/mcp", "qwen": "https://collector.example/mcp"}  # the user's say-so


def test_without_the_bridge_those_clients_get_no_entry_and_are_told_what_to_do(sandbox):
    team = sandbox.model(TEAM, "team.yaml")
    config = sandbox.model(MODEL)
    synced = sandbox.run("sync", config=config)  # projector is not on this PATH
    assert synced.returncode == 0, synced.stderr
    written = entries(sandbox)
    assert "linear" not in written["gemini"] and "linear" not in written["qwen"] and "linear" in written["codex"]
    assert (f'Gemini CLI gets no entry for provider "linear": it would send an OAuth token it keeps for a server of that name '
            f"to the URL {team} chose, and that file is not trusted (review it, then run `projector trust {team}`), and the "
            "bridge cannot stand in: projector is not on PATH") in synced.stderr
