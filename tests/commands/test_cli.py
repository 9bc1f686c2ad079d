"""The command line as a person uses it: exit codes, what is printed where, init."""

from __future__ import annotations

import json
from pathlib import Path

from models import TWO_CLIENTS as MODEL


def test_diff_then_sync_then_nothing_to_do(sandbox):
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    diff = sandbox.run("diff", "--no-color", config=config)
    assert diff.returncode == 1, diff.stderr
    assert "--- /dev/null\n+++ ~/.codex/config.toml\n" in diff.stdout
    assert "+++ ~/.claude.json" in diff.stdout
    assert not (sandbox.home / ".claude.json").exists(), "diff writes nothing"

    sync = sandbox.run("sync", config=config)
    assert sync.returncode == 0, sync.stderr
    assert sync.stdout.splitlines() == ["created ~/.claude.json (Claude Code)", "created ~/.codex/config.toml (Codex CLI)"]
    written = json.loads((sandbox.home / ".claude.json").read_text())
    assert written["mcpServers"]["docs"]["command"] == str(sandbox.bin / "projector")

    again = sandbox.run("diff", config=config)
    assert (again.returncode, again.stdout) == (0, "")
    nothing = "nothing to do: every client's file already matches the model\n"
    assert sandbox.run("sync", config=config).stdout == nothing, "said by the fast path"
    (sandbox.home / ".claude.json").touch()  # a changed stat: the full sync has its say
    assert sandbox.run("sync", config=config).stdout == nothing
    assert sandbox.run("sync", "--force", config=config).stdout == nothing, "said by the full sync"
    assert sandbox.run("sync", "--quiet", config=config).stdout == ""


def test_quiet_sync_prints_only_warnings(sandbox):
    config = sandbox.model(MODEL)  # projector not on PATH: a warning
    result = sandbox.run("sync", "--quiet", config=config)
    assert result.returncode == 0
    assert result.stdout == ""
    assert result.stderr.startswith('warning: provider "docs" has bindings but projector is not on PATH')


def test_client_option_narrows_and_rejects_unknown_ids(sandbox):
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", "--client", "codex", config=config).stdout.startswith("created ~/.codex/config.toml")
    assert not (sandbox.home / ".claude.json").exists()
    bad = sandbox.run("sync", "--client", "claude", config=config)
    assert bad.returncode == 2 and "unknown client 'claude' (did you mean \"claude-code\"?)" in bad.stderr


def test_model_error_is_exit_2_with_location(sandbox):
    config = sandbox.model(MODEL.replace("docs: [a]", "docs: [z]"))
    for command in ("diff", "sync"):
        result = sandbox.run(command, config=config)
        assert result.returncode == 2
        assert result.stderr == f'error: {config}:10:12: bindings.~/work/a.docs[0]: "z" is not a KB of provider "docs" (it mounts: a, b)\n'


def test_broken_client_file_is_exit_1_and_the_others_still_sync(sandbox):
    config = sandbox.model(MODEL)
    sandbox.file(".claude.json", "{ // comment\n}\n")
    result = sandbox.run("sync", config=config)
    assert result.returncode == 1
    assert "error: ~/.claude.json:1:3: not valid JSON" in result.stderr
    assert (sandbox.home / ".codex" / "config.toml").exists()
    assert (sandbox.home / ".claude.json").read_text() == "{ // comment\n}\n"
    assert sandbox.run("diff", config=config).returncode == 2


def test_colour_on_request(sandbox):
    result = sandbox.run("diff", "--color", config=sandbox.model(MODEL))
    assert "\033[32m+" in result.stdout


def test_init_writes_a_starter_and_never_overwrites(sandbox):
    first = sandbox.run("init")
    target = sandbox.home / ".config" / "projector" / "projector.yaml"
    assert first.returncode == 0 and first.stdout.startswith("wrote ~/.config/projector/projector.yaml")
    assert sandbox.run("diff").returncode == 0  # the starter is a valid, empty model
    assert "# clients: [amp, antigravity, augment, claude-code," in target.read_text(), "the ids of every descriptor"
    schema = target.read_text().splitlines()[0].removeprefix("# yaml-language-server: $schema=")
    assert json.loads(Path(schema).read_text())["$schema"].startswith("https://json-schema.org/"), "a schema file that is there"
    target.write_text(MODEL)
    second = sandbox.run("init")
    assert second.returncode == 1 and "never overwrites" in second.stderr
    assert target.read_text() == MODEL


def test_missing_model_points_to_init(sandbox):
    result = sandbox.run("sync")
    assert result.returncode == 2 and "run `projector init`" in result.stderr


def test_read_only_client_file_is_reported_and_kept(sandbox):
    config = sandbox.model(MODEL)
    claude = sandbox.file(".claude.json", "{}\n")
    claude.chmod(0o444)
    result = sandbox.run("sync", config=config)
    assert result.returncode == 1
    # said once, at the end, like every file's error (issue 11, item 17: it said "left untouched" twice)
    assert "error: ~/.claude.json: is read-only (make it writable to let projector edit it); left untouched" in result.stderr.splitlines()
    assert result.stderr.count("left untouched") == 1
    assert claude.read_text() == "{}\n" and (sandbox.home / ".codex" / "config.toml").exists()


def test_the_written_bridge_entry_finds_a_model_kept_elsewhere(sandbox):
    import subprocess
    import tomllib

    sandbox.install_projector()
    config = sandbox.model(MODEL.replace("docs: [a]", "docs: []"), "models.yaml")
    sandbox.env["PROJECTOR_CONFIG"] = str(config)  # the user's shell knows; a client does not
    assert sandbox.run("sync").returncode == 0
    entry = tomllib.loads((sandbox.home / ".codex" / "config.toml").read_text())["mcp_servers"]["docs"]
    assert entry["args"] == ["mcp", "--provider", "docs", "--config", str(config)]
    client_env = {k: v for k, v in sandbox.env.items() if k != "PROJECTOR_CONFIG"}
    (sandbox.home / "work" / "a").mkdir(parents=True)
    started = subprocess.run([entry["command"], *entry["args"]], env=client_env, cwd=sandbox.home / "work" / "a", timeout=30,
                             input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n', capture_output=True, text=True)
    assert '"serverInfo":{"name":"projector"' in started.stdout, started.stderr


ACME = """\
# A client projector does not ship: one data file, nothing else.
id: acme
name: Acme Agent
format: jsonc
global:
  dirs: ["$ACME_HOME", "~/.acme"]
  files: [agent.json]
servers_key: [tools, mcp]
env_reference: "%{NAME}"
stdio_env: listed
templates:
  stdio: |
    {"run": {{ ([command] + args) | json }}, "pass": {{ pass_env | json }}}
  http: |
    {"endpoint": {{ url | json }}, "bearer": {{ env_ref(token_env) | json }}}
entry:
  url_keys: [endpoint]
  command: {key: run, form: array}
  env_key: pass
detect:
  paths: ["~/.acme"]
"""


def test_a_client_is_one_data_file(sandbox):
    sandbox.install_projector()
    sandbox.file(".config/projector/clients/acme.yaml", ACME)
    sandbox.file(".config/projector/projector.yaml", MODEL.replace("clients: [claude-code, codex]", "clients: [acme]").replace(
        "bindings:", "  web:\n    url: https://web.example.com/mcp\n    token_env: WEB_TOKEN\nbindings:"))
    synced = sandbox.run("sync")
    assert synced.returncode == 0, synced.stderr
    assert synced.stdout == "created ~/.acme/agent.json (Acme Agent)\n"
    assert json.loads((sandbox.home / ".acme" / "agent.json").read_text()) == {"tools": {"mcp": {
        "docs": {"run": [str(sandbox.bin / "projector"), "mcp", "--provider", "docs"], "pass": ["DOCS_TOKEN"]},
        "web": {"endpoint": "https://web.example.com/mcp", "bearer": "%{WEB_TOKEN}"},
    }}}
    again = sandbox.run("diff")
    assert (again.returncode, again.stdout) == (0, ""), "what it wrote, it reads back as its own"
    doctor = sandbox.run("doctor")
    assert "Acme Agent: ~/.acme/agent.json" in doctor.stdout and "will not pass" not in doctor.stdout

    sandbox.env["ACME_HOME"] = str(sandbox.root / "acme")  # its own relocating variable: the next sync follows it
    assert sandbox.run("sync").returncode == 0
    assert (sandbox.root / "acme" / "agent.json").exists()


CODEX_KEEPS = ("HOME", "LOGNAME", "PATH", "SHELL", "USER", "LANG", "LC_ALL", "TERM", "TMPDIR", "TZ")


def test_entries_work_in_codex_cleared_environment_with_xdg_folders_moved(sandbox):
    """XDG_CONFIG_HOME and XDG_STATE_HOME away from their defaults: Codex starts the bridge
    without them, so the entry itself must say where the model and the trust store are."""
    import subprocess
    import tomllib

    sandbox.install_projector()
    sandbox.env.update(XDG_CONFIG_HOME=str(sandbox.root / "xdg-config"), XDG_STATE_HOME=str(sandbox.root / "xdg-state"))
    model = sandbox.root / "xdg-config" / "projector" / "projector.yaml"
    model.parent.mkdir(parents=True)
    model.write_text(MODEL.replace("clients: [claude-code, codex]", "clients: [codex]").replace("docs: [a]", "docs: []"))
    workspace = sandbox.home / "work" / "a"
    sandbox.file("work/a/.projector.yaml", "providers:\n  notes: {command: ./notes}\n")
    (workspace / "notes").write_text("#!/bin/sh\necho started-in-the-workspace\n")
    (workspace / "notes").chmod(0o755)
    assert sandbox.run("trust", str(workspace)).returncode == 0
    assert sandbox.run("sync").returncode == 0
    servers = tomllib.loads((sandbox.home / ".codex" / "config.toml").read_text())["mcp_servers"]
    cleared = {name: sandbox.env[name] for name in CODEX_KEEPS if name in sandbox.env}

    def start(name: str) -> subprocess.CompletedProcess[str]:
        entry = servers[name]
        return subprocess.run([entry["command"], *entry["args"]], env=cleared, cwd=workspace, timeout=30,
                              input='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n', capture_output=True, text=True)

    docs = start("docs")
    assert '"serverInfo":{"name":"projector"' in docs.stdout, docs.stderr
    notes = start("notes")
    assert notes.stdout == "started-in-the-workspace\n", notes.stderr
