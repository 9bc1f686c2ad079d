"""An entry is projector's only if projector wrote it or the user said so (issue 27, stories 2
and 3): a user's entry that projector takes over is given back as it was, byte for byte, never
deleted."""

from __future__ import annotations

import json

from models import USERS_CODEX

CLAUDE = """{
  "numStartups": 7,
  "mcpServers": {
    "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me"]},
    "sentry": { "type": "http",  "url": "https://mcp.sentry.dev/mcp" }
  }
}
"""
CODEX = USERS_CODEX
MODEL = """\
version: 1
clients: [claude-code, codex]
providers:
  sentry:
    url: https://mcp.sentry.dev/mcp
"""
BOUND = MODEL + """bindings:
  ~/work/a:
    sentry: [x]
"""
EMPTY = "version: 1\nclients: [claude-code, codex]\nproviders: {}\n"


def _users_files(sandbox):
    return {".claude.json": sandbox.file(".claude.json", CLAUDE), ".codex/config.toml": sandbox.file(".codex/config.toml", CODEX)}


def test_a_same_name_entry_found_at_the_first_sync_is_taken_over_and_given_back_by_remove(sandbox):
    sandbox.install_projector()
    files = _users_files(sandbox)
    config = sandbox.model(MODEL)
    first = sandbox.run("sync", config=config)
    assert first.returncode == 0, first.stderr
    assert "took over sentry in ~/.codex/config.toml; `projector remove` gives it back" in first.stderr
    assert "took over sentry in ~/.claude.json; `projector remove` gives it back" in first.stderr
    assert "took over" not in sandbox.run("sync", config=config).stderr, "said once"
    assert files[".codex/config.toml"].read_text() == CODEX

    config.write_text(BOUND)  # the entries become the bridge: projector rewrites them
    assert sandbox.run("sync", config=config).returncode == 0
    assert "projector" in files[".codex/config.toml"].read_text() and "typed by hand" not in files[".codex/config.toml"].read_text()

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": CLAUDE, ".codex/config.toml": CODEX}
    assert json.loads((sandbox.home / ".local/state/projector/ledger.json").read_text())["files"] == {}


def test_a_provider_dropped_from_the_model_gives_back_the_entry_it_took_over(sandbox):
    sandbox.install_projector()
    files = _users_files(sandbox)
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", config=config).returncode == 0  # the very entry projector writes: taken over
    config.write_text(BOUND)
    assert sandbox.run("sync", config=config).returncode == 0  # rewritten as the bridge
    assert "typed by hand" not in files[".codex/config.toml"].read_text()
    config.write_text(EMPTY)
    dropped = sandbox.run("sync", config=config)
    assert dropped.returncode == 0, dropped.stderr
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": CLAUDE, ".codex/config.toml": CODEX}


def test_adopting_an_entry_projector_never_wrote_keeps_it_for_the_user(sandbox):
    """Story 3: `adopt` of a foreign entry, then `remove`, left the user without it."""
    sandbox.install_projector()
    claude = sandbox.file(".claude.json", CLAUDE)
    config = sandbox.model(MODEL.replace("clients: [claude-code, codex]", "clients: [claude-code]")
                           + "  fs:\n    command: my-fs\n")
    assert "was not written by projector" in sandbox.run("sync", config=config).stderr
    adopted = sandbox.run("adopt", "claude-code", "fs", config=config)
    assert adopted.returncode == 0, adopted.stderr
    assert sandbox.run("sync", config=config).returncode == 0 and claude.read_text() == CLAUDE
    assert sandbox.run("remove", config=config).returncode == 0
    assert claude.read_text() == CLAUDE


def test_a_hand_written_entry_with_the_providers_plain_url_is_the_users(sandbox):
    """Its URL alone does not make an entry projector's: one the model would write otherwise (the
    bridge, here) is left as it is, with a warning."""
    sandbox.install_projector()
    files = _users_files(sandbox)
    config = sandbox.model(BOUND)
    synced = sandbox.run("sync", config=config)
    assert 'entry "sentry" was not written by projector; left as it is' in synced.stderr
    assert {name: path.read_text() for name, path in files.items()} == {".claude.json": CLAUDE, ".codex/config.toml": CODEX}


def _ledger_of_0_3_0(sandbox, entries):
    """A ledger as projector 0.3.0 wrote it (schema 1): it recorded as its own every entry it
    found identical to what it would write, the user's retyped ones too (story 2)."""
    from projector.compile.ledger import entry_hash

    files = {str(sandbox.home / path): {"client": client, "entries": {name: entry_hash(value) for name, value in values.items()},
                                        "created": None}
             for path, (client, values) in entries.items()}
    ledger = sandbox.home / ".local/state/projector/ledger.json"
    ledger.parent.mkdir(parents=True, exist_ok=True)
    ledger.write_text(json.dumps({"schema": 1, "files": files}, indent=2) + "\n")
    return ledger


def test_after_an_upgrade_remove_keeps_the_entries_a_0_3_0_ledger_took_silently(sandbox):
    """0.3.0 recorded a user's retyped entry as its own; remove then deleted it. Now such an
    entry is kept (only the bridge, which no one types, goes)."""
    sandbox.install_projector()
    bridge = {"type": "stdio", "command": str(sandbox.bin / "projector"), "args": ["mcp", "--provider", "kb"]}
    claude = CLAUDE.replace('"sentry"', '"kb": ' + json.dumps(bridge) + ',\n    "sentry"')
    files = {".claude.json": sandbox.file(".claude.json", claude), ".codex/config.toml": sandbox.file(".codex/config.toml", CODEX)}
    sentry = {"url": "https://mcp.sentry.dev/mcp"}
    _ledger_of_0_3_0(sandbox, {".claude.json": ("claude-code", {"sentry": {"type": "http", **sentry}, "kb": bridge}),
                               ".codex/config.toml": ("codex", {"sentry": sentry})})
    config = sandbox.model(EMPTY)

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert files[".codex/config.toml"].read_text() == CODEX
    assert files[".claude.json"].read_text() == CLAUDE


def test_after_an_upgrade_a_sync_that_rewrites_a_0_3_0_entry_keeps_its_original(sandbox):
    sandbox.install_projector()
    codex = sandbox.file(".codex/config.toml", CODEX)
    _ledger_of_0_3_0(sandbox, {".codex/config.toml": ("codex", {"sentry": {"url": "https://mcp.sentry.dev/mcp"}})})
    config = sandbox.model(BOUND.replace("clients: [claude-code, codex]", "clients: [codex]"))
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert "took over sentry in ~/.codex/config.toml" in synced.stderr
    assert "projector" in codex.read_text()
    assert sandbox.run("remove", config=config).returncode == 0
    assert codex.read_text() == CODEX


def test_after_an_upgrade_remove_takes_out_a_kbs_url_a_0_3_0_ledger_recorded(sandbox):
    """A URL narrowed with ?kbs= is, like the bridge, a shape only projector writes: the entry a
    0.3.0 ledger recorded goes at `remove`, as it would have with the ledger lost (issue 27)."""
    sandbox.install_projector()
    narrowed = {"type": "http", "url": "https://kb.dev/mcp?kbs=a,b"}
    claude = CLAUDE.replace('"sentry"', '"kb": ' + json.dumps(narrowed) + ',\n    "sentry"')
    path = sandbox.file(".claude.json", claude)
    _ledger_of_0_3_0(sandbox, {".claude.json": ("claude-code", {"kb": narrowed})})
    config = sandbox.model(MODEL.replace("clients: [claude-code, codex]", "clients: [claude-code]")
                           + "  kb:\n    url: https://kb.dev/mcp\n")
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert "took over kb" not in synced.stderr, "nothing of the user's to take over"
    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert path.read_text() == CLAUDE
