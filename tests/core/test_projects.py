"""Project files and trust: `projector trust`/`untrust`, what a sync writes for them, and the
notices for files that do not count."""

from __future__ import annotations

import json

from projector.core import projects

MODEL = """\
version: 1
clients: [claude-code]
providers:
  docs:
    url: https://kb.example.com/mcp
    token_env: DOCS_TOKEN
    kbs: [a, b]
"""

PROJECT = """\
docs: [a]
providers:
  notes:
    command: ./bin/notes
    env: {NOTES_KEY: "${NOTES_KEY}"}
"""


def _entries(sandbox) -> dict:
    return json.loads((sandbox.home / ".claude.json").read_text()).get("mcpServers", {})


def test_trust_then_sync_writes_the_declared_provider_and_untrust_takes_it_away(sandbox):
    sandbox.install_projector()
    config = sandbox.model(MODEL)
    sandbox.file(".claude.json", "{}\n")
    workspace = sandbox.file("work/a/.projector.yaml", PROJECT).parent
    assert sandbox.run("sync", config=config).returncode == 0
    assert sorted(_entries(sandbox)) == ["docs"] and "url" in _entries(sandbox)["docs"]  # not trusted: nothing of it

    trusted = sandbox.run("trust", str(workspace), config=config)
    assert trusted.returncode == 0, trusted.stderr
    assert trusted.stdout.splitlines()[2:4] == ["  local server notes: runs ./bin/notes; sets NOTES_KEY", "  settings that only narrow: docs"]
    synced = sandbox.run("sync", config=config)  # the trust store changed: no fast path
    assert synced.stdout == "updated ~/.claude.json (Claude Code)\n", synced.stderr
    entries = _entries(sandbox)
    assert entries["notes"]["args"][:3] == ["mcp", "--provider", "notes"]
    assert entries["docs"]["args"][:3] == ["mcp", "--provider", "docs"]  # bound by the project file: the bridge

    (workspace / ".projector.yaml").write_text(PROJECT + "# edited\n")  # trust withdrawn, entries kept
    assert sandbox.run("sync", config=config).stdout == "nothing to do: every client's file already matches the model\n"
    assert sorted(_entries(sandbox)) == ["docs", "notes"]

    untrusted = sandbox.run("untrust", str(workspace), config=config)  # --config, as every command takes
    assert untrusted.returncode == 0, untrusted.stderr
    assert untrusted.stdout.splitlines()[1] == ("run `projector sync` (the shell hook does it at the next prompt) to remove "
                                                "the entries only it declared: notes")
    assert sandbox.run("sync", config=config).stdout == "updated ~/.claude.json (Claude Code)\n"
    assert sorted(_entries(sandbox)) == ["docs"]
    again = sandbox.run("untrust", str(workspace))
    assert again.returncode == 1 and "is not trusted; nothing to do" in again.stderr


def test_trust_refuses_what_it_cannot_check(sandbox):
    config = sandbox.model(MODEL)
    missing = sandbox.run("trust", str(sandbox.home), config=config)
    assert missing.returncode == 2 and "no project file here" in missing.stderr
    sandbox.file("work/b/.projector.yaml", "providers:\n  docs:\n    command: x\n")
    clash = sandbox.run("trust", str(sandbox.home / "work/b"), config=config)
    assert clash.returncode == 1
    assert '~/work/b/.projector.yaml:2:3: providers.docs: "docs" is also a provider of your model' in clash.stderr
    sandbox.file("work/b/.projector.yaml", "providers:\n  Docs:\n    command: x\n")
    folded = sandbox.run("trust", str(sandbox.home / "work/b"), config=config)
    assert folded.returncode == 1
    assert ('~/work/b/.projector.yaml:2:3: providers.Docs: "Docs" and "docs" of your model differ only in case, and a client '
            "that folds the case of server names takes them for one: rename it") in folded.stderr


def test_files_that_do_not_count_are_named_with_what_to_do(sandbox):
    environ = sandbox.env
    outer = sandbox.file("work/.projector.yaml", "{}\n")
    inner = sandbox.file("work/a/.projector.yaml", "{}\n")
    projects.trust(str(inner), {}, inner.read_bytes(), environ)
    folder = str(sandbox.home / "work/a/deep")
    assert projects.around(folder, environ).notices == (
        f"{outer} is ignored: it is not trusted (review it, then run `projector trust {outer.parent}`)",
    )
    assert [p.root for p in projects.around(folder, environ).trusted] == [str(inner.parent)]
    inner.write_text("# changed\n")
    assert "changed since it was trusted" in projects.around(folder, environ).notices[0]
    assert projects.around(folder, environ).trusted == ()


def test_trusting_at_the_same_time_loses_no_record(sandbox):
    from concurrent.futures import ThreadPoolExecutor

    files = [sandbox.file(f"work/p{n}/.projector.yaml", f"# {n}\n") for n in range(16)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda f: projects.trust(str(f), {}, f.read_bytes(), sandbox.env), files))
    assert [p.file for p in projects.recorded(sandbox.env)] == sorted(str(f) for f in files)


def test_project_files_that_are_not_regular_files_neither_hang_nor_fill_memory(sandbox):
    """Anyone may put a .projector.yaml in a folder or above it; explain and every bridge start
    read them. A FIFO blocked the read, /dev/zero never ended it, /dev/stdin waited for the
    client's input (issue 11, item 2). Each is ignored with a notice that says why."""
    import os
    import subprocess
    import sys

    config = sandbox.model(MODEL)
    work = sandbox.home / "work"
    deepest = work / "a" / "b" / "c"
    deepest.mkdir(parents=True)
    os.mkfifo(work / ".projector.yaml")
    (work / "a" / ".projector.yaml").symlink_to("/dev/zero")
    (work / "a" / "b" / ".projector.yaml").symlink_to("/dev/stdin")
    (deepest / ".projector.yaml").write_bytes(b"# " + b"x" * 300_000 + b"\n")
    command = [sys.executable, "-m", "projector", "explain", str(deepest), "--config", str(config)]
    with subprocess.Popen(command, env=sandbox.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as explain:
        try:
            out, errors = explain.communicate(timeout=30)  # stdin stays open: /dev/stdin never ends
        finally:
            explain.kill()
    assert explain.returncode == 0, errors
    notices = [line.replace(str(sandbox.home), "~") for line in out.splitlines() if line.startswith("notice:")]
    assert notices == [
        "notice: ~/work/a/b/c/.projector.yaml is ignored: it is larger than 256 KiB",
        "notice: ~/work/a/b/.projector.yaml is ignored: it is not a regular file",
        "notice: ~/work/a/.projector.yaml is ignored: it is not a regular file",
        "notice: ~/work/.projector.yaml is ignored: it is not a regular file",
    ]
    for folder in (work, work / "a"):
        refused = sandbox.run("trust", str(folder), config=config)
        assert refused.returncode == 2
        assert refused.stderr == f"error: {projects.project_file(str(folder)).replace(str(sandbox.home), '~')} is not trusted: it is not a regular file\n"


def test_a_project_files_hooks_are_checked_when_it_is_trusted(sandbox):
    config = sandbox.model("version: 1\nproviders: {}\nhooks:\n  fmt: {event: PostToolUse, command: fmt}\n")
    sandbox.file("work/h/.projector.yaml", "hooks:\n  fmt: {enabled: false}\n  ghost: {enabled: true}\n")
    refused = sandbox.run("trust", str(sandbox.home / "work/h"), config=config)
    assert refused.returncode == 1
    assert '~/work/h/.projector.yaml:3:3: hooks.ghost: no hook named "ghost" to turn on or off (hooks: fmt)' in refused.stderr
    sandbox.file("work/h/.projector.yaml", "hooks:\n  fmt: {enabled: false}\n  own: {event: SessionStart, command: hello}\n")
    trusted = sandbox.run("trust", str(sandbox.home / "work/h"), config=config)
    assert trusted.returncode == 0, trusted.stderr
    assert "  hook fmt: turned off\n  hook own: on SessionStart runs hello\n" in trusted.stdout


def test_the_dispatcher_reads_project_files_as_far_as_trust_does():
    from projector.core import projects
    from projector.runtime import dispatch

    assert dispatch.PROJECT_FILE_LIMIT == projects.MAX_BYTES


def test_a_clone_trusted_as_two_repositories_stays_trusted_as_both(sandbox):
    """A fork's clone names both repositories (origin and upstream) and two repository bindings
    find it: `projector trust DIR` trusts it for each, and the second did not undo the first."""
    folder = str(sandbox.home / "src" / "api")
    projects.trust_clone(folder, "github.com/acme/api", sandbox.env)
    projects.trust_clone(folder, "github.com/me/api", sandbox.env)
    assert projects.clone_standing([(folder, "github.com/acme/api"), (folder, "github.com/me/api")], sandbox.env) == {}
    assert projects.clone_standing([(folder, "github.com/acme/web")], sandbox.env) == {
        folder: "was trusted as a clone of github.com/acme/api, github.com/me/api, not of github.com/acme/web"}
