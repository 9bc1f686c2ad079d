"""`projector adopt CLIENT PROVIDER`: a hand edit the user wants to keep becomes projector's own,
so `status` goes back to 0 (terraform import's idea)."""

from __future__ import annotations

from test_cli import MODEL


def test_an_adopted_hand_edit_is_in_sync_until_the_model_changes_the_entry(sandbox):
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", config=config).returncode == 0
    codex = sandbox.home / ".codex" / "config.toml"
    edited = codex.read_text().replace('env_vars = ["DOCS_TOKEN"]', 'env_vars = ["DOCS_TOKEN", "HTTPS_PROXY"]')
    codex.write_text(edited)
    drift = sandbox.run("status", config=config)
    assert drift.returncode == 1 and "`projector adopt codex docs` keeps it for good" in drift.stderr

    adopted = sandbox.run("adopt", "codex", "docs", config=config)
    assert adopted.returncode == 0, adopted.stderr
    assert adopted.stdout == ('~/.codex/config.toml: adopted entry "docs" as it is; sync keeps it until the model changes '
                              "what projector writes there\n")
    status = sandbox.run("status", config=config)
    assert (status.returncode, status.stderr) == (0, ""), status.stdout
    assert sandbox.run("sync", config=config).returncode == 0 and codex.read_text() == edited
    assert sandbox.run("diff", config=config).returncode == 0

    config.write_text(MODEL.replace("kb.example.com", "kb2.example.com"))  # projector now wants another entry
    assert sandbox.run("sync", config=config).returncode == 0
    assert "kb2.example.com" not in codex.read_text(), "a bridge entry does not name the URL"
    assert "HTTPS_PROXY" in codex.read_text(), "the bridge entry did not change: still the adopted one"
    config.write_text(MODEL.replace("docs: [a]", "docs: []").replace("bindings:\n  ~/work/a:\n    docs: []\n", ""))
    assert sandbox.run("sync", config=config).returncode == 0
    assert "HTTPS_PROXY" not in codex.read_text() and 'url = "https://kb.example.com/mcp"' in codex.read_text()


def test_adopting_what_is_not_drift_or_does_not_exist(sandbox):
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    sandbox.run("sync", config=config)
    same = sandbox.run("adopt", "codex", "docs", config=config)
    assert same.returncode == 0 and "nothing to adopt" in same.stdout
    missing = sandbox.run("adopt", "codex", "dcos", config=config)
    assert missing.returncode == 1
    assert missing.stderr == 'error: ~/.codex/config.toml has no entry "dcos" (did you mean "docs"?); nothing was changed\n'
    unknown = sandbox.run("adopt", "codx", "docs", config=config)
    assert unknown.returncode == 2 and 'unknown client \'codx\' (did you mean "codex"?)' in unknown.stderr


def test_a_users_same_name_entry_can_be_adopted(sandbox):
    config = sandbox.model(MODEL.replace("bindings:\n  ~/work/a:\n    docs: [a]\n", "").replace("claude-code, ", ""))
    codex = sandbox.file(".codex/config.toml", '[mcp_servers.docs]\ncommand = "my-docs"\n')
    assert "was not written by projector" in sandbox.run("status", config=config).stderr
    assert sandbox.run("adopt", "codex", "docs", config=config).returncode == 0
    assert sandbox.run("status", config=config).returncode == 0
    assert sandbox.run("sync", config=config).returncode == 0 and codex.read_text() == '[mcp_servers.docs]\ncommand = "my-docs"\n'
