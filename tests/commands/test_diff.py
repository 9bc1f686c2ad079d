"""`projector diff` as git users expect it: colour and a pager on a terminal only, NO_COLOR and
TERM=dumb honoured, and --stat."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

from models import CODEX_HOOKED, break_codex_trust, codex_hook_trust
from test_cli import MODEL


def on_terminal(sandbox, *args: str, **env: str) -> tuple[int, str]:
    """Run projector with its stdout on a pseudo-terminal; what the terminal showed."""
    main, secondary = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "projector", *args], env={**sandbox.env, **env}, cwd=sandbox.root,
                               stdin=subprocess.DEVNULL, stdout=secondary, stderr=subprocess.PIPE)
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    return process.wait(timeout=60), shown.decode().replace("\r\n", "\n")


def pager(sandbox) -> str:
    """A $PAGER that keeps what it was given, and its LESS, in files."""
    script = sandbox.bin / "record-pager"
    script.write_text(f'#!/bin/sh\necho "$LESS" > {sandbox.root}/pager-less\ncat > {sandbox.root}/paged\n')
    script.chmod(0o755)
    return str(script)


def test_on_a_terminal_the_diff_is_coloured_and_paged(sandbox):
    config = sandbox.model(MODEL)
    code, shown = on_terminal(sandbox, "diff", "--config", str(config), PAGER=pager(sandbox), TERM="xterm")
    assert code == 1 and shown == "", "the pager shows it, not projector"
    paged = (sandbox.root / "paged").read_text()
    assert "\033[32m+" in paged and "+++ ~/.codex/config.toml" in paged
    assert (sandbox.root / "pager-less").read_text() == "FRX\n", "less quits on one screen and keeps colours"


def test_no_color_and_a_dumb_terminal_get_plain_text(sandbox):
    config = sandbox.model(MODEL)
    code, shown = on_terminal(sandbox, "diff", "--no-pager", "--config", str(config), NO_COLOR="1", TERM="xterm")
    assert code == 1 and "+++ ~/.codex/config.toml" in shown and "\033[" not in shown
    code, shown = on_terminal(sandbox, "diff", "--config", str(config), PAGER=pager(sandbox), TERM="dumb")
    assert code == 1 and "+++ ~/.codex/config.toml" in shown and "\033[" not in shown
    assert not (sandbox.root / "paged").exists(), "no pager on a dumb terminal"


def test_a_pipe_gets_neither_colour_nor_pager(sandbox):
    config = sandbox.model(MODEL)
    result = sandbox.run("diff", config=config)
    assert result.returncode == 1 and "\033[" not in result.stdout and result.stdout.startswith("# ~/.claude.json: add docs\n--- /dev/null")


def test_stat_counts_lines_per_file(sandbox):
    config = sandbox.model(MODEL)
    sandbox.file(".claude.json", '{\n  "theme": "dark"\n}\n')
    result = sandbox.run("diff", "--stat", config=config)
    assert result.returncode == 1, result.stderr
    assert result.stdout == (
        " ~/.claude.json       | 11 ++++++++++-\n"
        " ~/.codex/config.toml |  3 +++\n"
        " 2 files changed, 13 insertions(+), 1 deletion(-)\n"
    )
    sandbox.run("sync", config=config)
    assert sandbox.run("diff", "--stat", config=config).stdout == ""


DRIFT_MODEL = """\
version: 1
clients: [claude-code, codex, gemini, kiro]
providers:
  docs: {url: "https://kb.example.com/mcp/routed", token_env: DOCS_TOKEN, kbs: [handbook, api-a], default: [handbook]}
  web: {url: "https://web.example.com/mcp"}
bindings:
  {work}:
    hooks:
      guard: {event: PreToolUse, command: guard}
"""

HAND_EDITS = {  # file -> (projector's text, the hand's)...: hook groups, server entries, files of two targets
    ".codex/hooks.json": [('"timeout": 600', '"timeout": 5')],  # its trust entry, in config.toml, follows it
    ".codex/config.toml": [("kbs=handbook", "kbs=mine")],
    ".gemini/settings.json": [('"timeout": 600000', '"timeout": 7'), ("kbs=handbook", "kbs=x")],  # servers and hooks
    ".claude/settings.json": [('"timeout": 600', '"timeout": 9')],
    ".kiro/settings/mcp.json": [("kbs=handbook", "kbs=x")],
}


def test_drift_is_shown_as_a_whole_forced_sync_would_write_each_file(sandbox, monkeypatch):
    """diff evaluates only the drifted files again (with force): each as `sync --force`, computed
    whole, would leave it, a file of two targets (Codex's servers and its hooks' trust) included."""
    from projector.commands import diff
    from projector.commands.common import compute

    sandbox.install_projector()
    config = sandbox.model(DRIFT_MODEL.replace("{work}", str(sandbox.home / "work")))
    assert sandbox.run("sync", config=config).returncode == 0
    for relative, edits in HAND_EDITS.items():
        path = sandbox.file(relative)
        for ours, hand in edits:
            path.write_text(path.read_text().replace(ours, hand))
    for name, value in sandbox.env.items():
        monkeypatch.setenv(name, value)
    outcome, state = compute(str(config), None, False)
    drifted = diff.drift(outcome, state, outcome.results)
    whole, _ = compute(str(config), None, True)
    shown = {r.path for r in drifted}
    assert {str(p.relative_to(sandbox.home)) for p in shown} == set(HAND_EDITS)
    files: dict = {}  # each file from its text to what its last target leaves: one diff per file
    for r in whole.results:
        if r.path in shown:
            files[r.path] = (r.shown, files.get(r.path, (None, r.before))[1], r.after)
    assert [(r.shown, r.before, r.after) for r in drifted] == [each for each in files.values() if each[1] != each[2]]


def test_the_heading_of_a_file_of_two_targets_names_each_drifted_entry(sandbox):
    """Codex's config.toml holds its servers and the trust of projector's hook groups: a server
    entry changed by hand is named in diff's heading (the trust part, in sync, says nothing
    over it), and so is a trust entry changed by hand beside it."""
    sandbox.install_projector()
    config = sandbox.model(DRIFT_MODEL.replace("{work}", str(sandbox.home / "work")))
    assert sandbox.run("sync", config=config).returncode == 0
    path = sandbox.file(".codex/config.toml")
    path.write_text(path.read_text().replace("kbs=handbook", "kbs=mine"))
    shown = sandbox.run("diff", config=config)
    assert shown.returncode == 1, shown.stderr
    headings = [line for line in shown.stdout.splitlines() if line.startswith("# ~/.codex/config.toml")]
    assert headings == ["# ~/.codex/config.toml: drift docs (changed by hand, kept by sync); `projector sync --force` would write:"]
    break_codex_trust(path)
    shown = sandbox.run("diff", config=config)
    headings = [line for line in shown.stdout.splitlines() if line.startswith("# ~/.codex/config.toml")]
    assert headings == [f"# ~/.codex/config.toml: drift docs, {codex_hook_trust(sandbox.home)} "
                        "(changed by hand, kept by sync); `projector sync --force` would write:"], "one heading and one diff for the file"
    assert shown.stdout.count("--- ~/.codex/config.toml") == 1 and "+trusted_hash" in shown.stdout and "kbs=handbook" in shown.stdout


def test_a_file_of_two_targets_is_one_diff_from_its_text_now_to_its_text_after_the_sync(sandbox):
    """Codex's config.toml holds its servers and the trust of projector's hook groups: the diff
    shows it once, from nothing to what the sync writes, under a heading naming every entry
    that changes there; `patch` applies it as it is."""
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    shown = sandbox.run("diff", config=config)
    assert shown.returncode == 1, shown.stderr
    assert shown.stdout.count("+++ ~/.codex/config.toml") == 1 and shown.stdout.count("+++ ~/.codex/hooks.json") == 1
    headings = [line for line in shown.stdout.splitlines() if line.startswith("# ")]
    assert headings == [f"# ~/.codex/config.toml: add docs, add {codex_hook_trust(sandbox.home)}", "# ~/.codex/hooks.json: add PreToolUse"]
    at = shown.stdout.index("# ~/.codex/config.toml")
    assert shown.stdout[at:].split("\n", 1)[1].startswith("--- /dev/null\n+++ ~/.codex/config.toml\n")
    patched = sandbox.root / "patched"
    for relative in (".codex/config.toml", ".codex/hooks.json"):
        (patched / relative).parent.mkdir(parents=True, exist_ok=True)
        (patched / relative).touch()
    applied = subprocess.run(["patch", "-p0", "--batch", "--silent"], input=shown.stdout.replace("~/", ""), text=True, cwd=patched,
                             capture_output=True)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert sandbox.run("sync", config=config).returncode == 0
    assert (patched / ".codex/config.toml").read_text() == sandbox.file(".codex/config.toml").read_text()


def test_stat_and_json_give_one_line_and_one_record_per_file(sandbox):
    import json

    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED)
    stat = sandbox.run("diff", "--stat", config=config)
    lines = stat.stdout.splitlines()
    assert [line.split("|")[0].strip() for line in lines[:-1]] == ["~/.codex/config.toml", "~/.codex/hooks.json"], stat.stdout
    assert lines[-1].startswith(" 2 files changed")
    report = json.loads(sandbox.run("diff", "--json", config=config).stdout)
    assert report["schema"] == 1 and [f["path"] for f in report["files"]] == ["~/.codex/config.toml", "~/.codex/hooks.json"]
    codex = report["files"][0]
    assert codex["entries"] == {"docs": "add", codex_hook_trust(sandbox.home): "add"}
    assert codex["diff"].startswith("--- /dev/null\n+++ ~/.codex/config.toml\n") and "+trusted_hash" in codex["diff"]
    assert (codex["drift"], codex["restyles"], codex["client"], codex["kind"]) == ([], [], "codex", "global")


def test_a_changed_file_names_the_drift_it_keeps(sandbox):
    """A file sync changes and keeps a hand edit in: one diff (what sync writes), whose heading
    names the change and the drift."""
    sandbox.install_projector()
    config = sandbox.model(CODEX_HOOKED.replace("    hooks:\n      guard: {event: PreToolUse, command: guard}\n", ""))
    assert sandbox.run("sync", config=config).returncode == 0
    path = sandbox.file(".codex/config.toml")
    path.write_text(path.read_text().replace('"mcp"', '"mcp", "--mine"'))
    assert "--mine" in path.read_text()
    config = sandbox.model(CODEX_HOOKED)
    shown = sandbox.run("diff", config=config)
    headings = [line for line in shown.stdout.splitlines() if line.startswith("# ~/.codex/config.toml")]
    assert headings == [f"# ~/.codex/config.toml: add {codex_hook_trust(sandbox.home)}; drift docs (changed by hand, kept by sync)"]
    assert shown.stdout.count("--- ~/.codex/config.toml") == 1 and "+trusted_hash" in shown.stdout and "-args" not in shown.stdout
