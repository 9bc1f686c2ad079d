"""``projector dispatch EVENT``: which hooks run for a folder, how, and what the client hears back.

Each test runs the real command (``python -m projector dispatch``) with a payload on stdin, as a
client does, in a sandbox HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from projector.core import hooks


def _marker(path: Path, text: str = "ran") -> str:
    return f"echo {text} >> {path}"


class Hooks:
    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.a = sandbox.home / "work" / "a"
        self.b = sandbox.home / "work" / "b"
        for folder in (self.a / "sub", self.b):
            folder.mkdir(parents=True)
        self.log = sandbox.root / "log"

    def model(self, text: str) -> Path:
        return self.sandbox.model("version: 1\nproviders: {}\n" + text)

    def dispatch(self, model: Path, event: str, payload: dict | bytes, *flags: str, env: dict | None = None,
                 cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        return subprocess.run([sys.executable, "-m", "projector", "dispatch", "--config", str(model), *flags, event], input=data,
                              env=dict(self.sandbox.env, **(env or {})), capture_output=True, cwd=cwd or self.sandbox.root, timeout=60)

    def lines(self) -> list[str]:
        return self.log.read_text().split() if self.log.exists() else []


@pytest.fixture
def box(sandbox) -> Hooks:
    return Hooks(sandbox)


def test_the_folder_comes_from_the_payload_and_its_workspace_hooks_run_in_order(box):
    model = box.model(f"hooks:\n  first: {{event: PreToolUse, command: {_marker(box.log, 'global')!r}}}\n"
                      f"bindings:\n  {box.a}:\n    hooks:\n      second: {{event: PreToolUse, command: {_marker(box.log, 'a')!r}}}\n")
    done = box.dispatch(model, "PreToolUse", {"cwd": str(box.a / "sub"), "tool_name": "Bash"})
    assert done.returncode == 0 and box.lines() == ["global", "a"]
    box.dispatch(model, "PreToolUse", {"cwd": str(box.b), "tool_name": "Bash"})
    assert box.lines() == ["global", "a", "global"], "B is in no workspace: only the global hook"
    box.dispatch(model, "PreToolUse", {"tool_name": "Bash"}, cwd=box.a)
    assert box.lines()[-2:] == ["global", "a"], "without cwd in the payload, the process's folder"


def test_a_hook_runs_in_the_workspace_root_with_the_payload_on_stdin(box):
    model = box.model(f"bindings:\n  {box.a}:\n    hooks:\n      where: {{event: PreToolUse, command: 'pwd > {box.log}; cat >> {box.log}'}}\n")
    payload = {"cwd": str(box.a / "sub"), "tool_name": "Bash", "session_id": "s-1"}
    box.dispatch(model, "PreToolUse", payload)
    where, received = box.log.read_text().split("\n", 1)
    assert where == str(box.a) and json.loads(received) == payload


def test_the_matcher_chooses_tools_as_the_clients_do(box):
    model = box.model(f"hooks:\n  edits: {{event: PostToolUse, matcher: 'Edit|Write', command: {_marker(box.log, 'edits')!r}}}\n"
                      f"  pattern: {{event: PostToolUse, matcher: '^mcp__.*', command: {_marker(box.log, 'mcp')!r}}}\n"
                      f"  every: {{event: PostToolUse, matcher: '*', command: {_marker(box.log, 'every')!r}}}\n")
    for tool in ("Write", "WriteFile", "mcp__docs__search"):
        box.dispatch(model, "PostToolUse", {"cwd": str(box.b), "tool_name": tool})
    assert box.lines() == ["edits", "every", "every", "mcp", "every"]
    assert hooks.matches("Edit|Write", "UserPromptSubmit", {}), "an event without a matcher field matches all"


def test_a_workspace_turns_a_global_hook_off_and_another_on(box):
    model = box.model(f"hooks:\n  loud: {{event: Stop, command: {_marker(box.log, 'loud')!r}}}\n"
                      f"  quiet: {{event: Stop, enabled: false, command: {_marker(box.log, 'quiet')!r}}}\n"
                      f"bindings:\n  {box.a}:\n    hooks:\n      loud: {{enabled: false}}\n      quiet: {{enabled: true}}\n")
    box.dispatch(model, "Stop", {"cwd": str(box.a)})
    box.dispatch(model, "Stop", {"cwd": str(box.b)})
    assert box.lines() == ["quiet", "loud"]


def test_a_hook_that_runs_too_long_is_killed_with_what_it_started_and_reported(box):
    started = box.sandbox.root / "started"
    model = box.model(f"hooks:\n  slow: {{event: PreToolUse, timeout: 1, command: 'sleep 60 & echo $! > {started}; wait'}}\n"
                      f"  next: {{event: PreToolUse, command: {_marker(box.log, 'next')!r}}}\n")
    began = time.monotonic()
    done = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})
    assert time.monotonic() - began < 20
    assert done.returncode == 0, "a hook out of time does not block"
    assert 'hook "slow" ran longer than 1 s and was stopped' in done.stderr.decode()
    assert box.lines() == ["next"], "the hooks after it still run"
    pid = int(started.read_text())
    for _ in range(50):  # the kill reaches its process group: the sleep it started too
        if not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]:
            break
        time.sleep(0.1)
    else:
        pytest.fail("the hook's child outlived the timeout")


def test_exit_2_blocks_with_its_reason_and_stops_the_hooks_after_it(box):
    model = box.model("hooks:\n  guard: {event: PreToolUse, command: 'echo not here >&2; exit 2'}\n"
                      f"  after: {{event: PreToolUse, command: {_marker(box.log)!r}}}\n")
    done = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})
    assert (done.returncode, done.stderr.decode().strip(), done.stdout) == (2, "not here", b"")
    assert box.lines() == []
    as_json = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)}, "--block", "json")
    assert as_json.returncode == 0, "a client where exit 2 loses the reason gets a deny with exit 0"
    assert json.loads(as_json.stdout) == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                                                  "permissionDecisionReason": "not here"}}


def test_a_json_deny_blocks_and_contexts_are_merged_into_fields_every_client_takes(box):
    deny = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "R"}})
    context = json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow", "additionalContext": "one"},
                          "suppressOutput": True})
    model = box.model(f"hooks:\n  c1: {{event: PreToolUse, command: {json.dumps('echo ' + repr(context))}}}\n"
                      "  c2: {event: UserPromptSubmit, command: 'echo two'}\n"
                      f"bindings:\n  {box.a}:\n    hooks:\n      deny: {{event: PreToolUse, command: {json.dumps('echo ' + repr(deny))}}}\n")
    allowed = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})
    assert json.loads(allowed.stdout) == {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "one"}}, \
        "no allow, no fields of other events: a strict client would drop the whole answer"
    assert json.loads(box.dispatch(model, "UserPromptSubmit", {"cwd": str(box.b)}).stdout)["hookSpecificOutput"]["additionalContext"] == "two"
    denied = box.dispatch(model, "PreToolUse", {"cwd": str(box.a)})
    assert (denied.returncode, denied.stderr.decode().strip()) == (2, "R")


def test_a_failing_hook_is_reported_and_does_not_block(box):
    model = box.model("hooks:\n  broken: {event: PreToolUse, command: 'echo oops >&2; exit 1'}\n")
    done = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)}, "--block", "json")
    assert (done.returncode, done.stdout) == (0, b""), "exit 1 would deny the tool call in one client"
    assert 'hook "broken" failed (exit 1): oops' in done.stderr.decode()


def test_a_hook_gets_the_workspace_environment_it_asks_for(box):
    (box.a / ".env").write_text("FROM_FILE=file\n")
    model = box.model(f"bindings:\n  {box.a}:\n    hooks:\n      env: {{event: PreToolUse, env_files: [.env], env: {{FROM_MODEL: '${{FROM_FILE}}-model', GONE: null}}, "
                      f"command: 'echo $FROM_FILE $FROM_MODEL ${{GONE:-unset}} > {box.log}'}}\n")
    box.dispatch(model, "PreToolUse", {"cwd": str(box.a)}, env={"GONE": "set"})
    assert box.log.read_text().split() == ["file", "file-model", "unset"]


def test_a_project_file_counts_while_trusted_and_is_ignored_once_changed(box):
    model = box.model("hooks: {}\n")
    project = box.a / ".projector.yaml"
    project.write_text(f"hooks:\n  own: {{event: PreToolUse, command: {_marker(box.log)!r}}}\n")
    payload = {"cwd": str(box.a / "sub")}
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines() == [], "an untrusted project file's hooks never run"
    assert box.sandbox.run("trust", str(box.a), config=model).returncode == 0
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines() == ["ran"]
    project.write_text(project.read_text() + "# changed\n")
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines() == ["ran"], "a change withdraws the trust"


def test_an_included_layers_hooks_run_only_while_it_is_trusted(box):
    """A team's layer (issue 18) can name commands: its hooks, as its local servers, run only
    while it is trusted with its bytes; a `git pull` that changes it stops them, and the table
    the dispatcher keeps follows the layer, not only the model's own file."""
    team = box.sandbox.file("team/projector.yaml", f"version: 1\nhooks:\n  team: {{event: PreToolUse, command: {_marker(box.log, 'team')!r}}}\n")
    model = box.model(f"include: [{team}]\nhooks:\n  mine: {{event: PreToolUse, command: {_marker(box.log, 'mine')!r}}}\n")
    payload = {"cwd": str(box.b)}
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines() == ["mine"], "the team's layer is not trusted: its hook does not run"
    assert box.sandbox.run("trust", str(team), config=model).returncode == 0
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines()[1:] == ["team", "mine"], "trusted: the team's hook runs, in the layers' order"
    team.write_text(team.read_text() + "# pulled\n")
    box.dispatch(model, "PreToolUse", payload)
    assert box.lines()[3:] == ["mine"], "changed since it was trusted: its hook stops"


def test_an_unknown_event_runs_nothing_and_says_so(box):
    model = box.model(f"hooks:\n  any: {{event: PreToolUse, command: {_marker(box.log)!r}}}\n")
    done = box.dispatch(model, "BeforeTool", {"cwd": str(box.b)})
    assert (done.returncode, box.lines()) == (0, [])
    assert "unknown event 'BeforeTool'" in done.stderr.decode()


def test_projectors_own_trouble_never_fails_the_clients_action(box):
    done = box.dispatch(box.sandbox.root / "missing.yaml", "PreToolUse", b"not json")
    assert done.returncode == 0 and b"no model here" in done.stderr


def test_no_hook_for_the_folder_imports_nothing_heavy(box):
    model = box.model(f"bindings:\n  {box.a}:\n    hooks:\n      own: {{event: PreToolUse, command: {_marker(box.log)!r}}}\n")
    box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})  # the first keeps the table
    done = box.dispatch(model, "PreToolUse", {"cwd": str(box.b)}, env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines() if line.startswith("import time:")}
    assert "projector.runtime.dispatch" in imported
    assert not imported & {"typing", "dataclasses", "subprocess", "pathlib", "ruamel.yaml", "jsonschema", "projector.core.model"}
    with_hook = box.dispatch(model, "PreToolUse", {"cwd": str(box.a)}, env={"PYTHONPROFILEIMPORTTIME": "1"})
    imported = {line.split("|")[-1].strip() for line in with_hook.stderr.decode().splitlines() if line.startswith("import time:")}
    assert box.lines() == ["ran"] and not imported & {"typing", "dataclasses", "subprocess", "pathlib", "projector.core.model"}


def test_the_table_follows_an_edit_of_the_model(box):
    model = box.model(f"hooks:\n  one: {{event: PreToolUse, command: {_marker(box.log, 'one')!r}}}\n")
    box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})
    model.write_text(model.read_text().replace("'one'", "'two'").replace(" one", " two"))
    os.utime(model, (1, 1))  # an mtime set back: the stat still tells
    box.dispatch(model, "PreToolUse", {"cwd": str(box.b)})
    assert box.lines() == ["one", "two"]
