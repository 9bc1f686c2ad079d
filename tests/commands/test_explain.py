"""`explain`: what entry each client gets for a provider, as the sync would write it."""

from __future__ import annotations

import json

MODEL = """\
version: 1
clients: [codex, copilot, cline]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
    default: [handbook]
"""


def _explain(sandbox, config, *flags):
    result = sandbox.run("explain", *flags, str(sandbox.home / "w"), config=config)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_a_token_provider_says_which_clients_get_the_bridge_instead_of_http(sandbox):
    """Cline cannot reference a variable in a header: it gets the bridge, not the plain HTTP entry."""
    sandbox.install_projector()
    (sandbox.home / "w").mkdir()
    config = sandbox.model(MODEL)
    line = "provider docs: handbook — no binding: the provider's default; entry: HTTP in 2 clients, the bridge in 1: cline"
    assert line in _explain(sandbox, config).splitlines()
    verbose = _explain(sandbox, config, "-v")
    assert ("  entry: HTTP in 2 clients, the bridge in 1: cline\n"
            "    in codex, copilot: plain HTTP https://kb.example.com/mcp?kbs=handbook (the same in every folder)\n"
            "    in cline: the projector bridge, which narrows to the set above in this folder\n") in verbose
    docs = json.loads(_explain(sandbox, config, "--json"))["providers"][0]
    assert (docs["entry"], docs["entries"]) == ("mixed", {"http": ["codex", "copilot"], "bridge": ["cline"]})
    synced = json.loads(_explain(sandbox, config, "--json"))["clients"]
    assert "command" in synced["cline"]["docs"] and "url" in synced["codex"]["docs"]  # what the sync writes agrees


def test_without_projector_on_path_the_clients_that_need_the_bridge_get_no_entry(sandbox):
    (sandbox.home / "w").mkdir()
    config = sandbox.model(MODEL)
    assert "; entry: HTTP in 2 clients, no entry in 1: cline" in _explain(sandbox, config).splitlines()[2]
    docs = json.loads(_explain(sandbox, config, "--json"))["providers"][0]
    assert docs["entries"] == {"http": ["codex", "copilot"], "none": ["cline"]}


def test_when_every_client_gets_the_same_entry_one_kind_is_said(sandbox):
    (sandbox.home / "w").mkdir()
    config = sandbox.model(MODEL.replace("copilot, cline", "copilot"))
    assert _explain(sandbox, config).splitlines()[2].endswith("; entry: HTTP in every client")
    assert "  entry: plain HTTP https://kb.example.com/mcp?kbs=handbook (the same in every folder)" in _explain(sandbox, config, "-v")
    assert json.loads(_explain(sandbox, config, "--json"))["providers"][0]["entry"] == "http"


def test_oauth_providers_say_the_bridge_everywhere_or_which_clients_get_none(sandbox):
    """``oauth: true`` signs in through the bridge in every client; ``oauth: client`` has no bridge,
    so a client that cannot take its HTTP entry gets none."""
    sandbox.install_projector()
    (sandbox.home / "w").mkdir()
    config = sandbox.model(MODEL.replace(
        "  docs:\n    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n    default: [handbook]\n",
        "  linear:\n    url: https://mcp.linear.app/mcp\n    oauth: true\n"
        "  slack:\n    url: https://mcp.slack.com/mcp\n    oauth: client\n").replace("cline", "cline, claude-desktop"))
    linear, slack = _explain(sandbox, config).splitlines()[2:4]
    assert linear.startswith("provider linear: ") and linear.endswith("; entry: the bridge in every client")
    assert slack.startswith("provider slack: ") and slack.endswith("; entry: HTTP in 3 clients, no entry in 1: claude-desktop")
    report = json.loads(_explain(sandbox, config, "--json"))
    assert [p["entry"] for p in report["providers"]] == ["bridge", "mixed"]
