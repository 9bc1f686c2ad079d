"""What a new user ran into (issue 30): each command tells one story about the same state."""

from __future__ import annotations

import json

MODEL = """\
version: 1
clients: [codex, kiro]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
"""


def _drifted(sandbox):
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", config=config).returncode == 0
    codex = sandbox.home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace("https://kb.example.com/mcp", "https://kb.example.com/mcp?kbs=mine"))
    return config


def test_drift_is_told_one_way_by_sync_diff_and_status(sandbox):
    config = _drifted(sandbox)
    for _ in range(2):  # the second sync answers from the fast path: it says the same
        synced = sandbox.run("sync", config=config)
        assert synced.returncode == 0, synced.stderr
        assert "nothing to do" not in synced.stdout
        assert synced.stdout == ("kept ~/.codex/config.toml: docs was changed by hand (drift); "
                                 "`projector adopt codex docs` keeps it, `projector sync --force` puts projector's back\n")
    diff = sandbox.run("diff", "--no-pager", config=config)
    assert diff.returncode == 1
    assert "drift" in diff.stdout and '-url = "https://kb.example.com/mcp?kbs=mine"' in diff.stdout
    assert '+url = "https://kb.example.com/mcp"' in diff.stdout
    status = sandbox.run("status", config=config)
    assert (status.returncode, status.stdout.splitlines()[0]) == (1, "~/.codex/config.toml: drift docs (kept by sync)")
    assert sandbox.run("adopt", "codex", "docs", config=config).returncode == 0
    assert sandbox.run("sync", config=config).stdout == "nothing to do: every client's file already matches the model\n"
    assert sandbox.run("diff", "--no-pager", config=config).returncode == 0


def test_status_sees_withdrawn_trust(sandbox):
    sandbox.install_projector()
    (sandbox.home / "work" / "a").mkdir(parents=True)
    config = sandbox.model(MODEL + "bindings:\n  ~/work/a:\n    docs: []\n")
    sandbox.file("work/a/.projector.yaml", "docs: []\n")
    assert sandbox.run("trust", str(sandbox.home / "work" / "a"), config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0
    assert sandbox.run("status", config=config).returncode == 0
    sandbox.file("work/a/.projector.yaml", "docs: [] # edited\n")
    status = sandbox.run("status", config=config)
    assert status.returncode == 1
    assert ("~/work/a/.projector.yaml: trust withdrawn (it changed since it was trusted; its workspace ignores it): "
            "review it and run `projector trust ~/work/a`") in status.stdout
    report = json.loads(sandbox.run("status", "--json", config=config).stdout)
    assert report["in_sync"] is False and report["withdrawn"] == [{"file": "~/work/a/.projector.yaml", "why": "changed"}]


def test_explain_of_a_folder_that_does_not_exist_says_so_and_still_explains(sandbox):
    config = sandbox.model(MODEL)
    result = sandbox.run("explain", str(sandbox.home / "nonexistent"), config=config)
    assert result.returncode == 1
    assert result.stderr.startswith("warning: ~/nonexistent does not exist; explained as if it did\n")
    assert "provider docs:" in result.stdout


FOREIGN = MODEL.replace("clients: [codex, kiro]", "clients: [codex, kiro, opencode]") + """\
hooks:
  note: {event: Stop, command: "echo done"}
"""


def test_a_warning_about_an_unchanged_state_is_said_once_and_doctor_lists_it(sandbox):
    sandbox.install_projector()
    sandbox.file(".kiro/settings/mcp.json", json.dumps({"mcpServers": {"docs": {"command": "my-own-docs"}}}))
    config = sandbox.model(FOREIGN)
    first = sandbox.run("sync", config=config)
    own = 'entry "docs" was not written by projector'
    assert own in first.stderr and "OpenCode" in first.stderr
    config.write_text(config.read_text() + "# touched\n")  # a change to the model: a full sync, the same state
    for command in ("sync", "diff", "status"):
        again = sandbox.run(command, config=config)
        assert "warning" not in again.stderr, (command, again.stderr)
    listed = sandbox.run("doctor", config=config).stdout
    assert own in listed and "OpenCode" in listed
    without_hook = sandbox.model(MODEL.replace("clients: [codex, kiro]", "clients: [codex, kiro, opencode]"), "other.yaml")
    assert "OpenCode" not in sandbox.run("sync", config=without_hook).stderr
    assert "OpenCode" in sandbox.run("sync", config=config).stderr, "a state that went and came back is told again"
