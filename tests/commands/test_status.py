"""`projector status`: 0 in sync, 1 drift or pending, 2 error; --json for machines."""

from __future__ import annotations

import json

from models import CODEX_KIRO as MODEL


def test_pending_then_in_sync_then_drift(sandbox):
    config = sandbox.model(MODEL)
    pending = sandbox.run("status", "--json", config=config)
    assert pending.returncode == 1
    report = json.loads(pending.stdout)
    assert report["schema"] == 1 and report["in_sync"] is False
    assert [(f["path"], f["pending"], f["entries"]) for f in report["files"]] == [
        ("~/.codex/config.toml", True, {"docs": "add"}),
        ("~/.kiro/settings/mcp.json", True, {"docs": "add"}),
    ]
    sandbox.run("sync", config=config)
    clean = sandbox.run("status", config=config)
    assert (clean.returncode, clean.stdout) == (0, "~/.codex/config.toml: in sync\n~/.kiro/settings/mcp.json: in sync\n")

    kiro = sandbox.home / ".kiro" / "settings" / "mcp.json"
    kiro.write_text(kiro.read_text().replace("https://kb.example.com/mcp", "https://kb.example.com/mcp?kbs=mine"))
    drift = sandbox.run("status", "--json", config=config)
    assert drift.returncode == 1
    kiro_report = json.loads(drift.stdout)["files"][1]
    assert (kiro_report["drift"], kiro_report["pending"]) == (["docs"], False)


def test_errors_are_exit_2(sandbox):
    config = sandbox.model(MODEL)
    sandbox.file(".codex/config.toml", "[broken\n")
    result = sandbox.run("status", "--json", config=config)
    assert result.returncode == 2
    assert json.loads(result.stdout)["errors"] == ["~/.codex/config.toml:1:8: not valid TOML: Expected ']' at the end of a table declaration"]
    model_error = sandbox.run("status", "--json", config=sandbox.model("version: 3\nproviders: {}\n", "bad.yaml"))
    assert model_error.returncode == 2 and json.loads(model_error.stdout)["in_sync"] is False


def test_a_running_sync_makes_another_wait_then_give_up_clearly(sandbox):
    import fcntl

    lock = sandbox.home / ".local" / "state" / "projector" / "sync.lock"
    lock.parent.mkdir(parents=True)
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        result = sandbox.run("sync", "--wait", "0.2", config=sandbox.model(MODEL))
    assert result.returncode == 2
    assert result.stderr == "error: another projector sync is running (it holds ~/.local/state/projector/sync.lock); nothing was written, try again\n"
    assert not (sandbox.home / ".codex").exists()


def test_a_file_of_two_targets_is_one_line_and_one_record(sandbox):
    """Codex's config.toml holds its servers and the trust of projector's hook groups: status
    names the file once, with the entries of both (the trust's as `hook trust KEY`)."""
    from models import CODEX_HOOKED, break_codex_trust, codex_hook_trust

    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    trust = codex_hook_trust(sandbox.home)
    pending = sandbox.run("status", config=config)
    assert pending.stdout.splitlines() == [f"~/.codex/config.toml: pending: add docs, add {trust}", "~/.codex/hooks.json: pending: add PreToolUse"]
    report = json.loads(sandbox.run("status", "--json", config=config).stdout)
    assert [(f["path"], f["pending"], f["entries"]) for f in report["files"]] == [
        ("~/.codex/config.toml", True, {"docs": "add", trust: "add"}), ("~/.codex/hooks.json", True, {"PreToolUse": "add"})]
    assert sandbox.run("sync", config=config).returncode == 0
    path = sandbox.file(".codex/config.toml")
    path.write_text(path.read_text().replace('"mcp"', '"mcp", "--mine"'))
    break_codex_trust(path)
    drift = sandbox.run("status", config=config)
    assert drift.returncode == 1
    assert drift.stdout.splitlines() == [f"~/.codex/config.toml: drift docs, {trust} (kept by sync)", "~/.codex/hooks.json: in sync"]
