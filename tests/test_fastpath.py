"""The fast path of `projector sync`: its fingerprint describes what the last sync saw, so no
change made during that sync or since (a client rewriting its file, an edit that keeps the
model's size and mtime) is taken for "nothing to do", while changes that cannot change the result
(a client rewriting its file around projector's entries, a file created beside a project file)
still are; it is decided with the standard library alone. The variables that move a client's
files come from the client descriptors (through compile.targets.dependencies, the function that
lists the files) and are kept in the fingerprint, so changing any of them makes the next sync
work."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

import pytest
from models import CODEX_HOOKED, TWO_CLIENTS  # TWO_CLIENTS: claude-code and codex; docs bound to ~/work/a

from projector.compile.clients import registry
from projector.core.locations import VARIABLES
from projector.core.fingerprint import fingerprint_path


def _moved_by(variable: str) -> str:
    """A client whose file this variable moves (its first folder names it)."""
    return next(c.id for c in registry().values()
                if variable in c.file_variables or any(d == f"${variable}" or d.startswith(f"${variable}/") for d in c.dirs))


RELOCATING = sorted({v for c in registry().values() for v in c.variables()} - set(VARIABLES))


def test_every_relocating_variable_is_known_from_the_descriptors():
    assert {"CLAUDE_CONFIG_DIR", "CODEX_HOME", "COPILOT_HOME", "CRUSH_GLOBAL_CONFIG", "GEMINI_CLI_HOME", "QWEN_HOME",
            "GOOSE_PATH_ROOT", "VSCODE_PORTABLE", "VSCODE_APPDATA", "FLATPAK_XDG_CONFIG_HOME"} <= set(RELOCATING)


@pytest.mark.parametrize("variable", RELOCATING + ["XDG_CONFIG_HOME"])
def test_changing_a_relocating_variable_makes_the_next_sync_work(sandbox, variable):
    client = registry()[_moved_by(variable)]
    sandbox.install_projector()
    config = sandbox.model(f"version: 1\nclients: [{client.id}]\nproviders:\n  web:\n    url: http://127.0.0.1:9/mcp\n")
    _as_the_client_leaves_it(client, client.global_file(sandbox.env))
    assert sandbox.run("sync", config=config).returncode == 0
    before = client.global_file(sandbox.env)
    assert before.exists()

    moved = sandbox.root / "moved"
    sandbox.env[variable] = str(moved / "named.json") if variable in client.file_variables else str(moved)  # a file, or a folder
    after = client.global_file(sandbox.env)
    assert after != before and not after.exists()
    _as_the_client_leaves_it(client, after)
    synced = sandbox.run("sync", config=config)
    assert synced.returncode == 0, synced.stderr
    assert after.exists() and "127.0.0.1:9" in after.read_text(), f"the sync after {variable} changed wrote {client.name}'s file where it now is"


def _as_the_client_leaves_it(client, path: Path) -> None:
    """A client that writes its file itself first (projector never creates it): there it is."""
    if client.create is None:
        import paths

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(next((paths.FIXTURES / "existing").glob(f"{client.id}.*")).read_text())


def test_the_fingerprint_keeps_the_names_it_watches(sandbox):
    sandbox.install_projector()
    named = sandbox.model("version: 1\nclients: [gemini]\nproviders: {}\n")
    fingerprint = Path(fingerprint_path(str(named), sandbox.env))
    assert sandbox.run("sync", config=named).returncode == 0
    watched = set(marshal.loads(fingerprint.read_bytes())["variables"])
    assert {"GEMINI_CLI_HOME", "HOME", "PATH"} <= watched and "QWEN_HOME" not in watched, "the clients the model names"
    found = sandbox.model("version: 1\nproviders: {}\n")  # the same file: the same fingerprint
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

import projector.core.fingerprint as fingerprint

client_file, client_text, config = sys.argv[1:4]
recorded = fingerprint.record


def record(*args, **kwargs):
    Path(client_file).write_text(client_text)
    return recorded(*args, **kwargs)


fingerprint.record = record
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
    fingerprint = fingerprint_path(str(config), sandbox.env)
    recorded = os.stat(fingerprint)
    assert sandbox.run("sync", config=config).returncode == 0
    assert os.stat(fingerprint).st_ino == recorded.st_ino and os.stat(fingerprint).st_mtime_ns == recorded.st_mtime_ns


NOTHING = "nothing to do: every client's file already matches the model\n"


def _sync(sandbox, config, *args: str) -> tuple[bool, subprocess.CompletedProcess[str]]:
    """(whether it took the fast path, the run): the full sync imports the compiler."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "projector", "sync", *args, "--config", str(config)],
                          env=sandbox.env, capture_output=True, text=True, timeout=60, cwd=sandbox.root)
    assert done.returncode == 0, done.stderr
    return "projector.compile" not in done.stderr, done


def _ready(sandbox, model: str = TWO_CLIENTS):
    sandbox.install_projector()
    (sandbox.home / "work" / "a").mkdir(parents=True)
    config = sandbox.model(model)
    assert not _sync(sandbox, config)[0]
    fast, done = _sync(sandbox, config)
    assert fast and done.stdout == NOTHING
    return config


def _claude_rewrites(sandbox, change) -> None:
    path = sandbox.home / ".claude.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=4))  # its own layout, as Claude Code writes it


def test_claude_rewriting_its_file_around_our_entries_is_still_nothing_to_do(sandbox):
    config = _ready(sandbox)
    _claude_rewrites(sandbox, lambda d: d.update(numStartups=7, projects={"/elsewhere": {"mcpServers": {}, "allowedTools": []}}))
    fast, done = _sync(sandbox, config)
    assert fast and done.stdout == NOTHING
    fast, done = _sync(sandbox, config, "--quiet")
    assert fast and done.stdout == ""


def test_a_change_to_our_entries_or_a_shadowing_scope_is_a_full_sync(sandbox):
    config = _ready(sandbox)
    _claude_rewrites(sandbox, lambda d: d["mcpServers"]["docs"]["args"].append("--mine"))
    fast, done = _sync(sandbox, config)
    assert not fast and "changed by hand" in done.stderr
    assert _sync(sandbox, config)[0], "the drift is what the last sync saw"
    below = str(sandbox.home / "work" / "a" / "sub")
    _claude_rewrites(sandbox, lambda d: d.update(projects={below: {"mcpServers": {"docs": {"type": "http", "url": "https://kb.example.com/mcp"}}}}))
    assert not _sync(sandbox, config)[0]


def test_files_beside_project_files_change_nothing_but_a_project_file_does(sandbox):
    config = _ready(sandbox)
    (sandbox.home / "work" / "a" / "notes.txt").write_text("x")
    assert _sync(sandbox, config)[0]
    (sandbox.home / "work" / "a" / ".mcp.json").write_text('{"mcpServers": {}}\n')
    assert not _sync(sandbox, config)[0], "a project file appeared"


def test_what_tells_a_client_is_installed_counts_by_its_presence(sandbox):
    sandbox.install_projector()
    found = sandbox.model(TWO_CLIENTS.replace("clients: [claude-code, codex]\n", ""))  # the clients found here
    assert not _sync(sandbox, found)[0] and _sync(sandbox, found)[0]
    (sandbox.home / ".claude").mkdir()
    assert not _sync(sandbox, found)[0], "~/.claude appeared: Claude Code is installed now"
    assert (sandbox.home / ".claude.json").exists()
    (sandbox.home / ".claude" / "history.jsonl").write_text("{}\n")  # Claude Code at work
    assert _sync(sandbox, found)[0]



def test_a_project_file_in_a_bound_folder_that_was_missing_is_seen(sandbox):
    """A missing bound folder stands for the project files inside it (one entry and one look, not
    one per file a client could read there): once a project file appears in it, the sync works."""
    sandbox.install_projector()
    config = sandbox.model(TWO_CLIENTS)
    assert not _sync(sandbox, config)[0]
    assert _sync(sandbox, config)[0]
    (sandbox.home / "work" / "a" / ".codex").mkdir(parents=True)
    _sync(sandbox, config)  # the folder appeared: this sync looks inside, once
    assert _sync(sandbox, config)[0], "then nothing to do"
    (sandbox.home / "work" / "a" / ".codex" / "config.toml").write_text("[mcp_servers.docs]\nurl = \"https://kb.example.com/mcp\"\n")
    assert not _sync(sandbox, config)[0], "a project file appeared in a folder that was missing"


def _codex_ready(sandbox) -> tuple[Path, Path]:
    """A synced Codex model whose config.toml holds two of projector's parts: its server entry and
    the trust of its hook group ([hooks.state."…"]); the next sync took the fast path."""
    config = _ready(sandbox, CODEX_HOOKED)
    path = sandbox.home / ".codex" / "config.toml"
    assert "[mcp_servers.docs]" in path.read_text() and "trusted_hash" in path.read_text()
    return config, path


def test_codex_editing_its_config_elsewhere_is_still_nothing_to_do(sandbox):
    """Codex writes config.toml itself (a project's trust level, the model the person chose): the
    next sync is still the fast one, beside both of projector's parts of the file."""
    config, path = _codex_ready(sandbox)
    path.write_text('model = "o3"\n' + path.read_text() + f'\n[projects."{sandbox.home}/work/b"]\ntrust_level = "trusted"\n')
    fast, done = _sync(sandbox, config)
    assert fast and done.stdout == NOTHING


def test_a_hand_edit_of_either_part_of_codexs_config_is_seen(sandbox):
    config, path = _codex_ready(sandbox)
    written = path.read_text()
    path.write_text(written.replace('"mcp"', '"mcp", "--mine"'))
    fast, done = _sync(sandbox, config)
    assert not fast and "changed by hand" in done.stderr, "a server entry"
    path.write_text(written)
    assert not _sync(sandbox, config)[0]  # back as projector wrote it
    assert _sync(sandbox, config)[0]
    trusted = written[written.index('trusted_hash = "') + len('trusted_hash = "'):].split('"')[0]
    path.write_text(written.replace(trusted, "sha256:" + "0" * 64))
    fast, done = _sync(sandbox, config)
    assert not fast and "changed by hand" in done.stderr, "a trust entry"


def test_gemini_editing_its_settings_elsewhere_is_still_nothing_to_do_but_a_hook_edit_is_seen(sandbox):
    """Gemini's settings.json holds projector's servers and its hook groups: a setting of Gemini's
    own changes neither; a hand edit of projector's hook group is a full sync."""
    config = _ready(sandbox, CODEX_HOOKED.replace("clients: [codex]", "clients: [gemini]"))
    path = sandbox.home / ".gemini" / "settings.json"
    written = json.loads(path.read_text())
    assert "docs" in written["mcpServers"] and "BeforeTool" in written["hooks"]
    path.write_text(json.dumps({"ui": {"theme": "GitHub"}, **written}, indent=2))
    fast, done = _sync(sandbox, config)
    assert fast and done.stdout == NOTHING
    written["hooks"]["BeforeTool"][0]["hooks"][0]["timeout"] = 5
    path.write_text(json.dumps(written, indent=2))
    fast, done = _sync(sandbox, config)
    assert not fast and "changed by hand" in done.stderr
