"""What `projector sync` says of a file that holds several of its targets (Codex's config.toml:
its servers and the trust of projector's hook groups): one line per file, its entries combined."""

from __future__ import annotations

import json
import tomllib

from models import CODEX_HOOKED, break_codex_trust, codex_hook_trust


# A trust hash is Codex's record that its user trusted a hook group: the model has no say in it.
TRUST_KEPT = "Codex CLI runs a hook group only while its hook trust is that group's hash (Codex CLI's hook review writes it anew)"


def test_a_file_of_two_targets_is_one_line_and_one_record(sandbox):
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    dry = sandbox.run("sync", "--dry-run", config=config)
    assert dry.stdout.splitlines() == ["would create ~/.codex/config.toml (Codex CLI)", "would create ~/.codex/hooks.json (Codex CLI)"]
    report = json.loads(sandbox.run("sync", "--dry-run", "--json", config=config).stdout)
    assert [(f["path"], f["action"], f["entries"]) for f in report["files"]] == [
        ("~/.codex/config.toml", "created", {"docs": "add", codex_hook_trust(sandbox.home): "add"}), ("~/.codex/hooks.json", "created", {"PreToolUse": "add"})]
    done = sandbox.run("sync", config=config)
    assert done.stdout.splitlines() == ["created ~/.codex/config.toml (Codex CLI)", "created ~/.codex/hooks.json (Codex CLI)"]
    logged = sandbox.run("log", "-n", "1").stdout
    assert logged.count("~/.codex/config.toml") == 1, logged


def test_the_drift_kept_in_a_file_of_two_targets_is_one_line(sandbox):
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    assert sandbox.run("sync", config=config).returncode == 0
    path = sandbox.file(".codex/config.toml")
    path.write_text(path.read_text().replace('"mcp"', '"mcp", "--mine"'))
    break_codex_trust(path)
    for _ in range(2):  # the second from the fast path: it says the same
        kept = sandbox.run("sync", config=config)
        assert kept.stdout.splitlines() == [
            f"kept ~/.codex/config.toml: docs, {codex_hook_trust(sandbox.home)} were changed by hand (drift); `projector adopt codex docs` keeps docs, "
            f"{TRUST_KEPT}, `projector sync --force` puts projector's back"]
    report = json.loads(sandbox.run("sync", "--json", config=config).stdout)
    assert report["kept"] == [{"path": "~/.codex/config.toml", "client": "codex", "drift": ["docs", codex_hook_trust(sandbox.home)]}]


def test_a_server_entry_taken_out_by_hand_beside_the_hook_trust_is_put_back(sandbox):
    """The next sync sees a hand edit of any of projector's entries in a file of two targets (the
    fast path compared only the last target's part of it: the trust entries)."""
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    assert sandbox.run("sync", config=config).returncode == 0
    path = sandbox.file(".codex/config.toml")
    written = path.read_text()
    path.write_text(written[written.index("[hooks.state"):])
    done = sandbox.run("sync", config=config)
    assert done.stdout == "updated ~/.codex/config.toml (Codex CLI)\n", done.stdout
    assert tomllib.loads(path.read_text()) == tomllib.loads(written), "its server entry back (after the trust table now)"


def test_a_trust_entry_changed_by_hand_is_named_as_diff_names_it_with_advice_that_applies(sandbox):
    """The warning names a trust entry as `hook trust KEY` (as diff, sync and status do), and its
    way out is not the model's (a trust hash is the client's record of its user's trust)."""
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    assert sandbox.run("sync", config=config).returncode == 0
    break_codex_trust(sandbox.file(".codex/config.toml"))
    done = sandbox.run("sync", config=config)
    assert done.stderr.splitlines() == [f"warning: ~/.codex/config.toml: {codex_hook_trust(sandbox.home)} was changed by hand since projector wrote it; "
                                        f"kept ({TRUST_KEPT}, --force overwrites)"]
    assert done.stdout.splitlines() == [
        f"kept ~/.codex/config.toml: {codex_hook_trust(sandbox.home)} was changed by hand (drift); {TRUST_KEPT}, `projector sync --force` puts projector's back"]
