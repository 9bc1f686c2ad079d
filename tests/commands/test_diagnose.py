"""`explain` and `doctor` on prepared HOMEs (snapshots, with the sandbox path replaced)."""

from __future__ import annotations

import json

MODEL = """\
version: 1
clients: [codex, copilot]
providers:
  docs:
    url: https://kb.example.com/mcp/routed
    token_env: DOCS_TOKEN
    kbs: [handbook, api-a, api-b]
    default: [handbook]
  web:
    url: https://web.example.com/mcp
    token_env: WEB_TOKEN
    default: []
bindings:
  ~/work/a:
    docs: [api-a, handbook]
  ~/work/a/vendor:
    docs: []
"""


def _clean(sandbox, text: str) -> str:
    return text.replace(str(sandbox.root), "/SANDBOX")


def test_explain_text_and_json(sandbox, snapshot):
    sandbox.install_projector()
    for folder in ("work/a/sub", "work/a/vendor", "elsewhere"):
        (sandbox.home / folder).mkdir(parents=True)
    config = sandbox.model(MODEL)
    outputs = {}
    for folder in ("work/a/sub", "work/a/vendor", "elsewhere"):
        result = sandbox.run("explain", "--verbose", str(sandbox.home / folder), config=config)
        assert result.returncode == 0, result.stderr
        outputs[folder] = _clean(sandbox, result.stdout)
    assert outputs == snapshot
    report = json.loads(sandbox.run("explain", str(sandbox.home / "work/a/sub"), "--json", config=config).stdout)
    assert report["schema"] == 1
    assert [(p["name"], p["kbs"], p["entry"]) for p in report["providers"]] == [("docs", ["api-a", "handbook"], "bridge"), ("web", [], "none")]
    assert [b["path"] for b in report["bindings"]] == ["~/work/a"]


def test_doctor_finds_problems_then_is_healthy(sandbox, snapshot):
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    sandbox.run("sync", config=config)
    codex = sandbox.home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace('env_vars = ["DOCS_TOKEN"]\n', "").replace(str(sandbox.bin), "/old/pipx/bin"))
    sandbox.file("work/a/.mcp.json", json.dumps({"mcpServers": {"docs": {"command": "my-own-docs"}}}))
    sandbox.file(".copilot/mcp-config.json", "{ broken")
    sick = sandbox.run("doctor", config=config)
    assert sick.returncode == 1
    assert _clean(sandbox, sick.stdout) == snapshot

    (sandbox.home / ".copilot" / "mcp-config.json").unlink()
    (sandbox.home / "work" / "a" / ".mcp.json").unlink()
    sandbox.run("sync", "--force", config=config)
    sandbox.env.update(DOCS_TOKEN="x", WEB_TOKEN="y")
    healthy = sandbox.run("doctor", config=config)
    assert healthy.returncode == 0, healthy.stdout
    assert "PROBLEM" not in healthy.stdout


def test_doctor_checks_local_providers_commands_and_the_variables_their_env_needs(sandbox):
    sandbox.install_projector()
    config = sandbox.model(
        "version: 1\nclients: [codex]\nproviders:\n  lint:\n    command: lint-mcp-missing\n"
        "    env: {LINT_TOKEN: '${LINT_TOKEN}'}\n"
    )
    assert sandbox.run("sync", config=config).returncode == 0
    codex = sandbox.home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace('env_vars = ["LINT_TOKEN"]\n', ""))
    report = sandbox.run("doctor", config=config)
    assert report.returncode == 1
    problems = [line for line in report.stdout.splitlines() if line.startswith("PROBLEM")]
    assert problems == [
        "PROBLEM  $LINT_TOKEN (in the env of local provider lint) is not set in this shell",
        "PROBLEM  lint-mcp-missing (local provider lint) is not on PATH here; if a workspace's env_files or direnv add it, "
        "`projector explain DIR` shows whether it is found there",
        "PROBLEM  ~/.codex/config.toml: Codex CLI will not pass $LINT_TOKEN to entry lint: run `projector sync`",
    ]


def test_explain_a_local_provider_names_sources_and_variables_never_values(sandbox, snapshot):
    sandbox.install_projector()
    workspace = sandbox.home / "work" / "a"
    (workspace / "sub").mkdir(parents=True)
    sandbox.file("work/a/.env", "SECRET_TOKEN=do-not-print\n")
    sandbox.file("work/a/.projector.yaml", "lint:\n  env: {FROM_PROJECT: also-secret}\n")
    config = sandbox.model(
        "version: 1\nclients: [codex]\nproviders:\n  lint:\n    command: lint-mcp\n    args: [--stdio]\n"
        "    env: {LEVEL: strict}\n    enabled: false\n"
        "bindings:\n  ~/work/a:\n    lint: {enabled: true, cwd: tools, env_files: [.env]}\n"
    )
    before = sandbox.run("explain", "--verbose", str(workspace / "sub"), config=config)
    assert sandbox.run("trust", str(workspace), config=config).returncode == 0
    after = sandbox.run("explain", "--verbose", str(workspace / "sub"), config=config)
    for shown in (before, after):
        assert shown.returncode == 0, shown.stderr
        assert "do-not-print" not in shown.stdout and "also-secret" not in shown.stdout
    assert {"untrusted": _clean(sandbox, before.stdout), "trusted": _clean(sandbox, after.stdout)} == snapshot


def test_doctor_names_what_each_new_client_needs_from_the_user(sandbox):
    """Gemini's trust gate is named; a client whose file cannot reference a variable is told apart
    from one a sync would fix; Gemini's bridge entry passes the token (it strips secret-looking
    variables), so no problem is reported for it."""
    sandbox.install_projector()
    sandbox.env.update(DOCS_TOKEN="x")
    config = sandbox.model(MODEL.replace("clients: [codex, copilot]", "clients: [gemini, claude-desktop]").replace("default: []", "default: [a]"))
    assert sandbox.run("sync", config=config).returncode == 0
    sandbox.env.update(WEB_TOKEN="y")
    report = sandbox.run("doctor", config=config).stdout.splitlines()
    assert any(line.startswith("note     Gemini CLI: in a folder it does not trust it turns off every MCP server") for line in report)
    problems = [line for line in report if line.startswith("PROBLEM")]
    assert problems == [
        f"PROBLEM  ~/.config/Claude/claude_desktop_config.json: Claude Desktop may not pass ${name} to entry {name.split('_')[0].lower()}, "
        "and its file cannot reference a variable: the bridge gets it only if Claude Desktop hands its own environment to the servers it starts"
        for name in ("DOCS_TOKEN", "WEB_TOKEN")
    ]


HOOKS = """\
version: 1
clients: [claude-code]
providers: {}
hooks:
  format: {event: PostToolUse, matcher: "Edit|Write", command: "no-such-formatter --all"}
  note: {event: Stop, command: "echo done"}
bindings:
  ~/work/a:
    hooks:
      format: {enabled: false}
      guard: {event: PreToolUse, matcher: Bash, command: ./tools/guard.sh, timeout: 5}
"""


def test_explain_lists_the_hooks_of_a_folder_and_where_each_came_from(sandbox):
    for folder in ("work/a/sub", "work/b"):
        (sandbox.home / folder).mkdir(parents=True)
    config = sandbox.model(HOOKS)
    inside = sandbox.run("explain", "--verbose", str(sandbox.home / "work/a/sub"), config=config).stdout
    assert "hook format: on PostToolUse (Edit|Write) turned off here — from /SANDBOX/projector.yaml:5\n" \
           "  turned off by binding ~/work/a\n" in _clean(sandbox, inside)
    assert "hook guard: on PreToolUse (Bash) runs ./tools/guard.sh — from binding ~/work/a (/SANDBOX/projector.yaml:11)\n" in _clean(sandbox, inside)
    assert "hooks run in: ~/work/a\n" in inside
    outside = json.loads(sandbox.run("explain", str(sandbox.home / "work/b"), "--json", config=config).stdout)
    assert [(h["name"], h["runs"], h["defined"]) for h in outside["hooks"]] == [
        ("format", True, f"model {sandbox.root}/projector.yaml"), ("note", True, f"model {sandbox.root}/projector.yaml")]


def test_doctor_names_hook_commands_that_are_not_there(sandbox):
    sandbox.install_projector()
    config = sandbox.model(HOOKS)
    report = sandbox.run("doctor", config=config).stdout
    assert "PROBLEM  hook format (the model) runs no-such-formatter, which is not on PATH here" in report
    assert "PROBLEM  hook guard (binding ~/work/a) runs ./tools/guard.sh, which is not an executable file there" in report
    assert "hook note" not in report, "echo is there"
    guard = sandbox.file("work/a/tools/guard.sh", "#!/bin/sh\n")
    guard.chmod(0o755)
    assert "hook guard" not in sandbox.run("doctor", config=config).stdout


def test_doctor_starts_each_entry_as_its_client_would_and_reports_one_that_cannot_find_the_model(sandbox):
    """An entry written before the XDG folders moved (no --config, no --state): Claude Code,
    which passes its whole environment, still finds the model; Codex, which clears it, does not."""
    import re

    sandbox.install_projector()
    sandbox.env.update(XDG_CONFIG_HOME=str(sandbox.root / "xdg-config"), XDG_STATE_HOME=str(sandbox.root / "xdg-state"))
    model = sandbox.root / "xdg-config" / "projector" / "projector.yaml"
    model.parent.mkdir(parents=True)
    model.write_text(MODEL.replace("codex, copilot", "claude-code, codex").replace("docs: []", "docs: [handbook]"))
    assert sandbox.run("sync").returncode == 0
    healthy = sandbox.run("doctor")
    assert "Codex CLI: 1 bridge entry started as it starts them: each finds the model and the trust store" in healthy.stdout
    for relative in (".codex/config.toml", ".claude.json"):
        path = sandbox.home / relative
        path.write_text(re.sub(r',\s*"--config",\s*"[^"]*",\s*"--state",\s*"[^"]*"', "", path.read_text()))
    report = sandbox.run("doctor")
    assert report.returncode == 1
    problems = [line for line in report.stdout.splitlines() if line.startswith("PROBLEM") and "started as" in line]
    assert problems == [
        "PROBLEM  ~/.codex/config.toml: entry docs, started as Codex CLI starts it, fails (~/.config/projector/projector.yaml: "
        "no model here: run `projector init` to write a starter, or pass --config): run `projector sync`"
    ]
    assert "Claude Code: 1 bridge entry started as it starts them" in report.stdout


def test_doctor_notes_skipped_clients_pending_removals_and_withdrawn_trust(sandbox):
    sandbox.install_projector()
    (sandbox.home / ".codex").mkdir()  # the only client installed here
    config = sandbox.model("version: 1\nproviders:\n  web:\n    url: https://web.example.com/mcp\n  old:\n    url: https://old.example.com/mcp\n"
                           "bindings:\n  ~/work/a:\n    web: []\n")
    workspace = sandbox.home / "work" / "a"
    sandbox.file("work/a/.projector.yaml", "web: []\n")
    assert sandbox.run("trust", str(workspace), config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0
    config.write_text(config.read_text().replace("  old:\n    url: https://old.example.com/mcp\n", ""))
    sandbox.file("work/a/.codex/config.toml", '[mcp_servers.web]\nurl = "https://web.example.com/mcp?kbs=a"\n')
    (workspace / ".projector.yaml").write_text("web: [] # edited\n")
    report = sandbox.run("doctor", config=config)
    assert report.returncode == 1
    lines = report.stdout.splitlines()
    skipped = next(line for line in lines if line.startswith("note     skipped, not installed here"))
    assert "Kiro" in skipped and "Codex CLI" not in skipped and skipped.endswith("name one under clients: in the model to write its file anyway")
    assert "note     ~/.codex/config.toml: sync will remove old" in lines
    assert "note     ~/work/a/.codex/config.toml: sync will remove web (it shadows projector's global entry); the file stays" in lines
    assert ("PROBLEM  ~/work/a/.projector.yaml changed since it was trusted: its workspace ignores it (its servers have no tools "
            "there) until you review it and run `projector trust ~/work/a`") in lines
    (workspace / ".projector.yaml").unlink()
    gone = sandbox.run("doctor", config=config).stdout.splitlines()
    assert "PROBLEM  ~/work/a/.projector.yaml is trusted but gone: `projector untrust ~/work/a` forgets it" in gone
