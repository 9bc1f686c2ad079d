"""The fast path of `projector sync`: its fingerprint describes what the last sync saw, so no
change made during that sync or since (a client rewriting its file, an edit that keeps the
model's size and mtime) is taken for "nothing to do"; the variables that move a client's files
come from the client descriptors (through compile.targets.dependencies, the function that lists
the files) and are kept in the fingerprint, so changing any of them makes the next sync work."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys

import pytest

from projector.compile.clients import registry
from projector.core.locations import VARIABLES


def _moved_by(variable: str) -> str:
    """A client whose file this variable moves (its first folder names it)."""
    return next(c.id for c in registry().values() if any(d == f"${variable}" or d.startswith(f"${variable}/") for d in c.dirs))


RELOCATING = sorted({v for c in registry().values() for v in c.variables()} - set(VARIABLES))


def test_every_relocating_variable_is_known_from_the_descriptors():
    assert {"CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "CRUSH_GLOBAL_CONFIG", "GEMINI_CLI_HOME", "QWEN_HOME",
            "GOOSE_PATH_ROOT", "VSCODE_PORTABLE", "VSCODE_APPDATA", "FLATPAK_XDG_CONFIG_HOME"} <= set(RELOCATING)


@pytest.mark.parametrize("variable", RELOCATING + ["XDG_CONFIG_HOME"])
def test_changing_a_relocating_variable_makes_the_next_sync_work(sandbox, variable):
    client = registry()[_moved_by(variable)]
    sandbox.install_projector()
    config = sandbox.model(f"version: 1\nclients: [{client.id}]\nproviders:\n  web:\n    url: http://127.0.0.1:9/mcp\n")
    assert sandbox.run("sync", config=config).returncode == 0
    before = client.global_file(sandbox.env)
    assert before.exists()

    moved = sandbox.root / "moved"
    sandbox.env[variable] = str(moved)
    after = client.global_file(sandbox.env)
    assert after != before and not after.exists()
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert after.exists(), f"the sync after {variable} changed wrote {client.name}'s file where it now is"


def test_the_fingerprint_keeps_the_names_it_watches(sandbox):
    sandbox.install_projector()
    fingerprint = sandbox.home / ".local" / "state" / "projector" / "fingerprint"
    named = sandbox.model("version: 1\nclients: [gemini]\nproviders: {}\n")
    assert sandbox.run("sync", config=named).returncode == 0
    watched = set(marshal.loads(fingerprint.read_bytes())["variables"])
    assert {"GEMINI_CLI_HOME", "HOME", "PATH"} <= watched and "QWEN_HOME" not in watched, "the clients the model names"
    found = sandbox.model("version: 1\nproviders: {}\n")
    assert sandbox.run("sync", config=found).returncode == 0
    assert set(RELOCATING) <= set(marshal.loads(fingerprint.read_bytes())["variables"]), "every client it may find"


MODEL = """\
version: 1
clients: [claude-code, codex]
providers:
  docs:
    url: https://kb1.example.com/mcp
    token_env: DOCS_TOKEN
"""
CLAUDE_BEFORE = '{\n  "numStartups": 3\n}\n'

# A real `projector sync` in which the client rewrites ~/.claude.json (from its own copy, without
# projector's entry, as Claude Code does) just before the fast path's fingerprint is recorded.
CLIENT_WRITES_IN_THE_GAP = """
import sys
from pathlib import Path

import projector.fastpath as fastpath

client_file, client_text, config = sys.argv[1:4]
recorded = fastpath.record


def record(*args, **kwargs):
    Path(client_file).write_text(client_text)
    return recorded(*args, **kwargs)


fastpath.record = record
sys.argv = ["projector", "sync", "--quiet", "--config", config]
from projector.cli import main

main()
"""


def _entries(sandbox) -> dict:
    return json.loads((sandbox.home / ".claude.json").read_text()).get("mcpServers", {})


def test_a_client_rewriting_its_file_before_the_fingerprint_is_not_locked_in(sandbox):
    """The fingerprint was taken after the lock was released: a client write in that gap made
    every later sync exit 0 doing nothing, while status said pending (issue 11, item 6)."""
    config = sandbox.model(MODEL)
    claude = sandbox.file(".claude.json", CLAUDE_BEFORE)
    script = [sys.executable, "-c", CLIENT_WRITES_IN_THE_GAP, str(claude), CLAUDE_BEFORE, str(config)]
    gap = subprocess.run(script, env=sandbox.env, capture_output=True, text=True, timeout=60, cwd=sandbox.root)
    assert gap.returncode == 0, gap.stderr
    assert claude.read_text() == CLAUDE_BEFORE  # the client's write landed after projector's
    again = sandbox.run("sync", config=config)
    assert again.returncode == 0 and again.stdout == "updated ~/.claude.json (Claude Code)\n", again.stderr
    assert "docs" in _entries(sandbox)
    assert sandbox.run("status", config=config).returncode == 0


def test_an_edit_that_keeps_the_models_size_and_mtime_is_seen(sandbox):
    """`sed` + `touch -r`: the same size and mtime. The model cache and the fingerprint are keyed
    on what an edit cannot keep (the ctime moves with any change), so the next sync and status
    see the edit (issue 11, item 7)."""
    config = sandbox.model(MODEL)
    assert sandbox.run("sync", config=config).returncode == 0
    before = os.stat(config)
    with open(config, "r+", encoding="utf-8") as handle:  # in place: the inode stays
        text = handle.read()
        handle.seek(0)
        handle.write(text.replace("kb1.example.com", "kb2.example.com"))
    os.utime(config, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(config)
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)

    assert sandbox.run("status", config=config).returncode == 1  # pending: the entries name kb1
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0 and "updated ~/.claude.json" in synced.stdout, synced.stderr
    assert "kb2.example.com" in (sandbox.home / ".claude.json").read_text()
    assert "kb2.example.com" in (sandbox.home / ".codex" / "config.toml").read_text()
    assert sandbox.run("status", config=config).returncode == 0


def test_after_a_sync_that_wrote_files_the_next_one_takes_the_fast_path(sandbox):
    """The fingerprint holds the ctime of each file as the sync left it (its rename moved the
    ctime of what it wrote): the next sync with nothing to do is the fast one, which writes
    nothing, not even a new fingerprint."""
    config = sandbox.model(MODEL)
    sandbox.file(".claude.json", CLAUDE_BEFORE)
    wrote = sandbox.run("sync", config=config).stdout
    assert wrote == "updated ~/.claude.json (Claude Code)\ncreated ~/.codex/config.toml (Codex CLI)\n"
    fingerprint = sandbox.home / ".local" / "state" / "projector" / "fingerprint"
    recorded = os.stat(fingerprint)
    assert sandbox.run("sync", config=config).returncode == 0
    assert os.stat(fingerprint).st_ino == recorded.st_ino and os.stat(fingerprint).st_mtime_ns == recorded.st_mtime_ns
