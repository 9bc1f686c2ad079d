"""Pruning: in every bound workspace, project entries that would shadow a provider's global entry
and have a shape projector (or its predecessor) wrote are removed; nothing else is touched."""

from __future__ import annotations

import json

import pytest

MODEL = """\
version: 1
clients: [claude-code, codex, opencode, crush, kiro, copilot]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
bindings:
  ~/work/a:
    docs: []
"""

LEGACY_HTTP = {"type": "http", "url": "https://kb.example.com/mcp?kbs=api-a"}
LEGACY_BRIDGE = {"command": "/old/venv/bin/projector", "args": ["mcp", "--provider", "docs"]}
MINE = {"command": "npx", "args": ["-y", "mine"]}

# project file -> (text with a legacy entry and an entry of the user's, text after pruning)
JSON_FILES = {
    ".mcp.json": "mcpServers",
    ".crush.json": "mcp",
    "crush.json": "mcp",
    ".kiro/settings/mcp.json": "mcpServers",
    ".github/mcp.json": "mcpServers",
}


def _write(sandbox, relative, text):
    return sandbox.file(f"work/a/{relative}", text)


@pytest.mark.parametrize("relative", sorted(JSON_FILES))
def test_legacy_entries_go_other_entries_stay_byte_for_byte(sandbox, relative):
    key = JSON_FILES[relative]
    before = '{\n  "%s": {\n    "docs": %s,\n    "other": %s\n  },\n  "keep": true\n}\n' % (key, json.dumps(LEGACY_HTTP), json.dumps(MINE))
    path = _write(sandbox, relative, before)
    result = sandbox.run("sync", config=sandbox.model(MODEL))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == '{\n  "%s": {\n    "other": %s\n  },\n  "keep": true\n}\n' % (key, json.dumps(MINE))
    assert sandbox.run("diff", config=sandbox.model(MODEL)).returncode == 0, "a second sync changes nothing"


@pytest.mark.parametrize(
    ("relative", "text"),
    [
        (".mcp.json", json.dumps({"mcpServers": {"docs": LEGACY_BRIDGE}}, indent=2) + "\n"),
        ("opencode.json", json.dumps({"mcp": {"docs": {"type": "remote", "url": "https://kb.example.com/mcp?kbs=a"}}}) + "\n"),
        (".opencode/opencode.json", '{\n  // old\n  "mcp": {"docs": {"type": "local", "command": ["/x/projector", "mcp", "--provider", "docs"]}}\n}\n'),
        (".codex/config.toml", '[mcp_servers.docs]\nurl = "https://kb.example.com/mcp?kbs=a"\n'),
    ],
)
def test_a_file_left_without_entries_is_kept(sandbox, relative, text):
    """projector never creates a project file, so it never deletes one: the user may have written
    it, git may track it."""
    path = _write(sandbox, relative, text)
    result = sandbox.run("sync", config=sandbox.model(MODEL))
    assert result.returncode == 0, result.stderr
    assert path.exists()
    assert f"updated ~/work/a/{relative} (" in result.stdout
    assert result.stdout.rstrip().endswith("removed docs, which shadowed projector's global entry; the file stays (`projector remove` puts it back)")
    assert sandbox.run("diff", config=sandbox.model(MODEL)).returncode == 0, "a second sync changes nothing"


def test_codex_project_entry_is_pruned_and_the_rest_kept(sandbox):
    path = _write(sandbox, ".codex/config.toml", '# project\nmodel = "o3"\n\n[mcp_servers.docs]\nurl = "https://kb.example.com/mcp?kbs=b"\n\n[mcp_servers.mine]\ncommand = "x"\n')
    sandbox.run("sync", config=sandbox.model(MODEL))
    assert path.read_text() == '# project\nmodel = "o3"\n\n[mcp_servers.mine]\ncommand = "x"\n'


def test_a_users_own_project_entry_stays_with_a_warning(sandbox):
    path = _write(sandbox, ".mcp.json", json.dumps({"mcpServers": {"docs": MINE}}) + "\n")
    before = path.read_text()
    result = sandbox.run("sync", config=sandbox.model(MODEL))
    assert path.read_text() == before
    assert 'warning: ~/work/a/.mcp.json: entry "docs" shadows the global entry in Claude Code and GitHub Copilot CLI; left as it is' in result.stderr


def test_claude_local_scope_is_pruned(sandbox):
    workspace = str(sandbox.home / "work" / "a")
    sandbox.file("work/a/.keep", "")
    claude = {"numStartups": 2, "projects": {workspace: {"allowedTools": [], "mcpServers": {"docs": LEGACY_HTTP, "other": MINE}}}}
    path = sandbox.file(".claude.json", json.dumps(claude, indent=2) + "\n")
    assert sandbox.run("sync", config=sandbox.model(MODEL)).returncode == 0
    after = json.loads(path.read_text())
    assert after["projects"][workspace] == {"allowedTools": [], "mcpServers": {"other": MINE}}
    assert "docs" in after["mcpServers"]  # the global entry is there


def test_claude_local_scope_below_a_bound_folder_is_pruned_too(sandbox):
    """/w/sub is governed by /w's binding: its per-folder entry would shadow the bridge there."""
    sub, beside = str(sandbox.home / "work" / "a" / "sub"), str(sandbox.home / "work" / "ab")
    claude = {"projects": {sub: {"mcpServers": {"docs": LEGACY_HTTP}}, beside: {"mcpServers": {"docs": LEGACY_HTTP}}}}
    path = sandbox.file(".claude.json", json.dumps(claude, indent=2) + "\n")
    config = sandbox.model(MODEL)
    status = sandbox.run("status", "--json", config=config)
    entries = {f["path"]: f["entries"] for f in json.loads(status.stdout)["files"]}["~/.claude.json"]
    assert entries[f"projects.{sub}: docs"] == "remove"
    assert sandbox.run("sync", config=config).returncode == 0
    after = json.loads(path.read_text())["projects"]
    assert after[sub] == {"mcpServers": {}}
    assert after[beside] == {"mcpServers": {"docs": LEGACY_HTTP}}, "/w/ab is not below /w/a"


def test_nothing_is_created_inside_a_workspace_and_other_folders_are_not_touched(sandbox):
    sandbox.file("work/a/README", "x")
    unbound = sandbox.file("elsewhere/.mcp.json", json.dumps({"mcpServers": {"docs": LEGACY_HTTP}}) + "\n")
    before = unbound.read_text()
    sandbox.run("sync", config=sandbox.model(MODEL))
    assert sorted(p.name for p in (sandbox.home / "work" / "a").iterdir()) == ["README"]
    assert unbound.read_text() == before


def test_a_linked_project_file_is_emptied_not_deleted(sandbox):
    real = sandbox.file("dotfiles/mcp.json", json.dumps({"mcpServers": {"docs": LEGACY_HTTP}}, indent=2) + "\n")
    link = sandbox.home / "work" / "a" / ".mcp.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(real)
    assert sandbox.run("sync", config=sandbox.model(MODEL)).returncode == 0
    assert link.is_symlink() and json.loads(real.read_text()) == {"mcpServers": {}}


def test_a_git_tracked_project_file_loses_the_entry_not_the_file(sandbox):
    """The reported case: a hand-written, committed .mcp.json whose only entry looks like an old
    projector entry. diff shows what sync will do; sync removes the entry and keeps the file."""
    import subprocess

    repository = sandbox.home / "work" / "a"
    path = _write(sandbox, ".mcp.json", json.dumps({"mcpServers": {"docs": LEGACY_HTTP}}, indent=2) + "\n")
    git = ["git", "-C", str(repository), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", ".mcp.json"], check=True)
    subprocess.run([*git, "commit", "-qm", "mcp"], check=True)
    config = sandbox.model(MODEL)
    shown = sandbox.run("diff", "--no-color", config=config)
    assert shown.returncode == 1
    assert "--- ~/work/a/.mcp.json\n+++ ~/work/a/.mcp.json\n" in shown.stdout and "+++ /dev/null" not in shown.stdout
    assert sandbox.run("sync", config=config).returncode == 0
    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    assert status == " M .mcp.json\n"
    assert json.loads(path.read_text()) == {"mcpServers": {}}


NEW_CLIENTS_MODEL = MODEL.replace("[claude-code, codex, opencode, crush, kiro, copilot]", "[gemini, qwen, cursor, vscode, zed, antigravity, amp]")
# The project files of the clients added later: a legacy entry in each client's own dialect.
NEW_FILES = {
    ".gemini/settings.json": ("mcpServers", {"httpUrl": "https://kb.example.com/mcp?kbs=api-a"}),
    ".qwen/settings.json": ("mcpServers", {"httpUrl": "https://kb.example.com/mcp?kbs=api-a"}),
    ".mcp.json": ("mcpServers", {"type": "http", "url": "https://kb.example.com/mcp?kbs=api-a"}),
    ".cursor/mcp.json": ("mcpServers", {"url": "https://kb.example.com/mcp?kbs=api-a", "headers": {}}),
    ".vscode/mcp.json": ("servers", {"type": "http", "url": "https://kb.example.com/mcp?kbs=api-a"}),
    ".zed/settings.json": ("context_servers", {"command": {"path": "/old/projector", "args": ["mcp", "--provider", "docs"]}}),
    ".agents/mcp_config.json": ("mcpServers", {"serverUrl": "https://kb.example.com/mcp?kbs=api-a"}),
    ".amp/settings.json": ("amp.mcpServers", {"url": "https://kb.example.com/mcp?kbs=api-a"}),
}


@pytest.mark.parametrize("relative", sorted(NEW_FILES))
def test_the_project_files_of_the_new_clients_are_pruned_too(sandbox, relative):
    key, legacy = NEW_FILES[relative]
    before = '{\n  // the project\'s servers\n  "%s": {\n    "docs": %s,\n    "other": %s\n  },\n  "keep": true\n}\n' % (key, json.dumps(legacy), json.dumps(MINE))
    if relative == ".mcp.json":
        before = before.replace("  // the project's servers\n", "")  # strict JSON there
    path = _write(sandbox, relative, before)
    result = sandbox.run("sync", config=sandbox.model(NEW_CLIENTS_MODEL))
    assert result.returncode == 0, result.stderr
    assert path.read_text() == before.replace('    "docs": %s,\n' % json.dumps(legacy), "")
    assert sandbox.run("diff", config=sandbox.model(NEW_CLIENTS_MODEL)).returncode == 0, "a second sync changes nothing"


def test_a_project_file_left_with_only_what_its_client_adds_is_kept(sandbox):
    path = _write(sandbox, ".qwen/settings.json", '{\n  "mcpServers": {"docs": {"httpUrl": "https://kb.example.com/mcp?kbs=a"}},\n  "$version": 4\n}\n')
    assert sandbox.run("sync", config=sandbox.model(NEW_CLIENTS_MODEL)).returncode == 0
    assert json.loads(path.read_text()) == {"mcpServers": {}, "$version": 4}, "projector did not create it: it stays"


def test_a_hand_written_entry_with_the_providers_url_is_the_users_and_every_removal_is_said_and_undone(sandbox):
    """Story 4 of issue 27: a committed .mcp.json with a hand-written `docs` entry (the provider's
    plain URL, for teammates without projector) was judged projector's and removed at a prompt,
    silently, and `remove` did not put it back."""
    import subprocess

    sandbox.install_projector()
    hand_written = '{\n  "mcpServers": {\n    "docs": { "type": "http", "url": "https://kb.example.com/mcp" }\n  }\n}\n'
    mcp = _write(sandbox, ".mcp.json", hand_written)
    legacy = '# old\n[mcp_servers.docs]\nurl = "https://kb.example.com/mcp?kbs=api-a"   # narrowed\n\n[mcp_servers.mine]\ncommand = "x"\n'
    codex = _write(sandbox, ".codex/config.toml", legacy)
    git = ["git", "-C", str(sandbox.home / "work" / "a"), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "mcp"], check=True)
    config = sandbox.model(MODEL)

    hook = sandbox.run("sync", "--quiet", config=config)
    assert hook.returncode == 0, hook.stderr
    assert mcp.read_text() == hand_written, "the plain URL is a shape people write: the user's"
    assert "shadows the global entry" in hook.stderr
    assert hook.stdout == ("updated ~/work/a/.codex/config.toml (Codex CLI): removed docs, which shadowed projector's global entry; "
                           "the file stays (`projector remove` puts it back)\n"), "a change in a repository is said, even --quiet"
    assert "[mcp_servers.docs]" not in codex.read_text()

    removed = sandbox.run("remove", config=config)
    assert removed.returncode == 0, removed.stderr
    assert codex.read_text() == legacy and mcp.read_text() == hand_written
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True, check=True).stdout == ""
    assert json.loads((sandbox.home / ".local/state/projector/ledger.json").read_text())["files"] == {}


def test_remove_puts_a_pruned_entry_back_into_a_file_changed_since(sandbox):
    legacy = '{\n  "mcpServers": {\n    "docs": {"type": "http", "url": "https://kb.example.com/mcp?kbs=a"},\n    "mine": {"command": "x"}\n  }\n}\n'
    mcp = _write(sandbox, ".mcp.json", legacy)
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", config=config).returncode == 0
    mcp.write_text(mcp.read_text().replace('"x"', '"y"'))  # the user's own edit since
    assert sandbox.run("remove", config=config).returncode == 0
    assert json.loads(mcp.read_text()) == {"mcpServers": {"mine": {"command": "y"}, "docs": {"type": "http", "url": "https://kb.example.com/mcp?kbs=a"}}}


def test_a_pruned_per_folder_entry_comes_back_when_no_binding_governs_its_folder(sandbox):
    """Claude Code's per-folder servers in ~/.claude.json: one pruned under a binding is kept in the
    ledger, put back when the binding goes, and by `remove`."""
    workspace = str(sandbox.home / "work" / "a")
    sandbox.file("work/a/.keep", "")
    claude = ('{\n  "numStartups": 2,\n  "projects": {\n    "%s": {\n      "mcpServers": {\n'
              '        "docs": {"type": "http", "url": "https://kb.example.com/mcp?kbs=api-a"},\n        "other": {"command": "npx"}\n'
              '      }\n    }\n  }\n}\n') % workspace
    path = sandbox.file(".claude.json", claude)
    config = sandbox.model(MODEL.replace("clients: [claude-code, codex, opencode, crush, kiro, copilot]", "clients: [claude-code]"))
    assert sandbox.run("sync", config=config).returncode == 0
    assert "docs" not in json.loads(path.read_text())["projects"][workspace]["mcpServers"]
    config.write_text(config.read_text().replace("bindings:\n  ~/work/a:\n    docs: []\n", ""))
    assert sandbox.run("sync", config=config).returncode == 0
    assert json.loads(path.read_text())["projects"][workspace]["mcpServers"]["docs"]["url"].endswith("?kbs=api-a"), "given back"
    config.write_text(MODEL.replace("clients: [claude-code, codex, opencode, crush, kiro, copilot]", "clients: [claude-code]"))
    assert sandbox.run("sync", config=config).returncode == 0
    assert sandbox.run("remove", config=config).returncode == 0
    assert path.read_text() == claude, "back in its place, byte for byte"
