"""`projector remove`: every projector entry out of every client, each file as it was before
projector (the README's uninstall section runs it)."""

from __future__ import annotations

import json
import subprocess
import tomllib

from models import SIX_CLIENTS

THEIRS = {
    ".claude.json": '{\n  "numStartups": 3,\n  "mcpServers": {\n    "mine": {"command": "my-server"}\n  }\n}\n',
    ".codex/config.toml": '# my codex\nmodel = "o3"\n',
    ".config/opencode/opencode.jsonc": "{\n  // mine\n  \"theme\": \"dark\",\n}\n",
}


def _synced_over_theirs(sandbox):
    """The user's files, and a sync of six clients over them: the model's path."""
    sandbox.install_projector()
    for relative, text in THEIRS.items():
        sandbox.file(relative, text)
    config = sandbox.model(SIX_CLIENTS)
    assert sandbox.run("sync", config=config).returncode == 0
    return config


def test_remove_gives_back_every_file_as_it_was(sandbox):
    config = _synced_over_theirs(sandbox)
    created = [".config/crush/crush.json", ".kiro/settings/mcp.json", ".copilot/mcp-config.json"]
    assert all((sandbox.home / relative).exists() for relative in created)

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert {relative: (sandbox.home / relative).read_text() for relative in THEIRS} == THEIRS
    assert not any((sandbox.home / relative).exists() for relative in created), "files projector created are gone"
    assert "removed ~/.kiro/settings/mcp.json (Kiro)" in removed.stdout.splitlines()
    assert json.loads((sandbox.home / ".local/state/projector/ledger.json").read_text())["files"] == {}
    again = sandbox.run("remove", config=config)
    assert again.stdout == "nothing to remove: no client file holds an entry projector wrote\n"


def test_remove_works_without_a_model_and_keeps_hand_edits_unless_forced(sandbox):
    config = sandbox.model(SIX_CLIENTS.replace("claude-code, codex, opencode, crush, kiro, copilot", "codex"))
    assert sandbox.run("sync", config=config).returncode == 0
    codex = sandbox.home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace('bearer_token_env_var = "WEB_TOKEN"', 'bearer_token_env_var = "MY_TOKEN"'))
    config.unlink()  # an uninstall may come after the model is gone
    kept = sandbox.run("remove")
    assert kept.returncode == 0, kept.stderr
    assert "[mcp_servers.web]" in codex.read_text() and "[mcp_servers.docs]" not in codex.read_text()
    assert 'entry "web" of a removed provider was changed by hand; kept (--force removes it)' in kept.stderr
    forced = sandbox.run("remove", "--force")
    assert forced.returncode == 0 and not codex.exists()


def test_a_file_projector_created_that_git_tracks_now_is_emptied_not_deleted(sandbox):
    """A dotfiles repository in HOME took in the file projector created."""
    config = sandbox.model(SIX_CLIENTS.replace("claude-code, codex, opencode, crush, kiro, copilot", "kiro"))
    assert sandbox.run("sync", config=config).returncode == 0
    git = ["git", "-C", str(sandbox.home), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".kiro/settings/mcp.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "dotfiles"], check=True)
    assert sandbox.run("remove").returncode == 0
    assert json.loads((sandbox.home / ".kiro/settings/mcp.json").read_text()) == {"mcpServers": {}}


HOOKED = """\
version: 1
clients: [claude-code, gemini, copilot]
providers:
  docs:
    url: https://kb.example.com/mcp
hooks:
  guard: {event: Stop, command: "true"}
"""


def test_remove_leaves_nothing_projector_made_and_everything_that_was_the_users(sandbox):
    """Story 5 of issue 27 (~/.gemini/settings.json stayed as {}, an empty ~/.copilot/hooks/
    stayed), and issue 25's item 10 (a user's empty hook list went with projector's group)."""
    sandbox.install_projector()
    settings = sandbox.file(".claude/settings.json", '{\n  "hooks": {"Stop": []},\n  "theme": "dark"\n}\n')
    config = sandbox.model(HOOKED)
    assert sandbox.run("sync", config=config).returncode == 0
    assert (sandbox.home / ".gemini/settings.json").exists() and (sandbox.home / ".copilot/hooks/projector.json").exists()
    assert "dispatch" in settings.read_text()

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert settings.read_text() == '{\n  "hooks": {"Stop": []},\n  "theme": "dark"\n}\n'
    assert not (sandbox.home / ".gemini").exists(), "a file and a folder projector created go"
    assert not (sandbox.home / ".copilot").exists()
    assert sorted(p.name for p in sandbox.home.iterdir()) == [".claude", ".local"]


def test_a_ledger_that_cannot_be_read_stops_sync_status_and_remove_with_its_line_and_touches_nothing(sandbox):
    config = _synced_over_theirs(sandbox)
    ledger = sandbox.home / ".local/state/projector/ledger.json"
    ledger.write_text(ledger.read_text()[:-20])  # cut short (a full disk, say)
    files = {path: path.read_bytes() for path in sandbox.home.rglob("*") if path.is_file() and ".local" not in path.parts}

    model = config.read_text()
    for command in ("sync", "status", "remove", "import"):
        ran = sandbox.run(command, config=config)
        assert ran.returncode != 0 and "Traceback" not in ran.stderr, ran.stderr
        assert f"{ledger}:" in ran.stderr and "move it aside" in ran.stderr
    assert {path: path.read_bytes() for path in files} == files and config.read_text() == model


def test_vibes_default_config_gets_the_entry_and_gets_its_empty_list_back(sandbox):
    """Mistral Vibe writes ``mcp_servers = []`` into the config.toml it makes on its first run."""
    default = 'active_model = "devstral-2"\nmcp_servers = []\nenable_connectors = true\n\n[[providers]]\nname = "mistral"\n'
    vibe = sandbox.file(".vibe/config.toml", default)
    config = sandbox.model(SIX_CLIENTS.replace("claude-code, codex, opencode, crush, kiro, copilot", "vibe"))
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    servers = tomllib.loads(vibe.read_text())["mcp_servers"]  # as Vibe reads it
    assert [s["name"] for s in servers] == ["docs", "web"]
    assert servers[1] == {"name": "web", "transport": "streamable-http", "url": "https://web.example.com/mcp?kbs=a", "api_key_env": "WEB_TOKEN"}
    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert vibe.read_text() == default


def test_a_lost_ledger_does_not_make_projectors_own_entries_the_users(sandbox):
    """The state folder's ledger deleted (a cleaned ~/.local/state): the next sync finds the bridge
    and ``?kbs=`` entries it wrote, which no one else writes, and `remove` still takes them out."""
    config = _synced_over_theirs(sandbox)
    ledger = sandbox.home / ".local/state/projector/ledger.json"
    ledger.unlink()
    again = sandbox.run("sync", config=config)
    assert again.returncode == 0, again.stderr
    assert "took over" not in again.stdout + again.stderr, "nothing of the user's was there to take over"
    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    left = {relative: (sandbox.home / relative).read_text() for relative in THEIRS}
    # The servers key projector made in OpenCode's file stays, empty: the ledger that said so is gone.
    assert left == THEIRS | {".config/opencode/opencode.jsonc": '{\n  // mine\n  "theme": "dark",\n  "mcp": {},\n}\n'}
    assert json.loads((sandbox.home / ".kiro/settings/mcp.json").read_text()) == {"mcpServers": {}}


def test_remove_names_a_hook_group_changed_by_hand_as_one_and_keeps_it(sandbox):
    """A hook group is no provider's entry: remove named it 'entry "PreToolUse" of a removed
    provider', which sent the user looking for a provider the model never had."""
    sandbox.install_projector()
    folder = sandbox.home / "work" / "a"
    config = sandbox.model(f"version: 1\nclients: [claude-code]\nproviders: {{}}\nbindings:\n  {folder}:\n    hooks:\n"
                           "      guard: {event: PreToolUse, command: guard-a}\n")
    assert sandbox.run("sync", config=config).returncode == 0
    settings = sandbox.home / ".claude" / "settings.json"
    edited = settings.read_text().replace('"timeout": 600', '"timeout": 5')
    settings.write_text(edited)
    kept = sandbox.run("remove", config=config)
    assert kept.returncode == 0, kept.stderr
    assert ('warning: ~/.claude/settings.json: hook group "PreToolUse" of a hook no longer in the model was changed by hand; kept '
            "(--force removes it)") in kept.stderr.splitlines(), kept.stderr
    assert "entry" not in kept.stderr and settings.read_text() == edited
