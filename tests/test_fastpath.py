"""The fast path of `projector sync`: the variables that move a client's files come from the
client descriptors (through compile.targets.dependencies, the function that lists the files) and
are kept in the fingerprint, so changing any of them makes the next sync do the work."""

from __future__ import annotations

import marshal

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
