"""Hooks per workspace through real clients (issue 16's acceptance).

The model has a global PreToolUse hook ``mark``; workspace A replaces it (same name) and adds
``only-a``; folder B is in no workspace, so it inherits the global one. Each client runs headless
through this tier's drivers against the mock model API, which asks for one shell command, with
the hook entries `projector sync` wrote. Every hook appends the payload's session id to a marker
file of its own, so a marker says which hooks ran in which session. Then A gets a hook that
blocks: the command does not run, and the reason reaches the model. The global hook's matcher
names each client's shell tool as its hooks see it (Bash; Gemini CLI's run_shell_command).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import drivers
import npm_tools
import pytest
from model_apis import ModelApi

CLIENTS = ["claude-code", "codex", "copilot", "gemini"]
# The shell tool the mock calls in each client, and its arguments for `command`.
SHELL = {
    "claude-code": ("Bash", lambda command: {"command": command, "description": "mock command"}),
    "codex": ("exec_command", lambda command: {"cmd": command}),
    "copilot": ("bash", lambda command: {"command": command, "description": "mock command"}),
    "gemini": ("run_shell_command", lambda command: {"command": command}),
}


def _binary(client: str) -> Path:
    name = drivers.DRIVERS[client].binary
    missing = npm_tools.missing_reason() or (None if npm_tools.binary(name) else f"{name} is not among the npm test tools")
    if missing and os.environ.get("CI") == "true":
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)
    if unusable := drivers.DRIVERS[client].unusable():
        pytest.skip(unusable)
    found = npm_tools.binary(name)
    assert found is not None
    return found


def _session(client: str, log: str) -> str:
    """The session id the client reports for its run (in its output, which the log begins with)."""
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(log) if c == "{"):
        try:
            value, _ = decoder.raw_decode(log, start)
        except ValueError:
            continue
        found = value.get("session_id") or (value.get("sessionId") if value.get("type") == "result" else None) if isinstance(value, dict) else None
        if found:
            return found
    marked = [line.split(":", 1)[1].strip() for line in log.splitlines() if line.lower().startswith("session id:")]  # codex exec
    assert marked, f"no session id in the output of {client}:\n{log[-3000:]}"
    return marked[0]


class Desk:
    def __init__(self, sandbox, client: str):
        self.sandbox, self.client = sandbox, client
        _binary(client)
        sandbox.install_projector()
        self.a = sandbox.home / "work" / "a"
        self.b = sandbox.home / "work" / "b"
        self.markers = sandbox.root / "markers"
        for folder in (self.a, self.b, self.markers):
            folder.mkdir(parents=True)
        self.ran = sandbox.root / "tool-ran"
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        self.env = dict(sandbox.env, PATH=f"{sandbox.bin}:{node}:/usr/bin:/bin", CI="1", TERM="dumb", NO_COLOR="1")
        if client == "claude-code":  # the user's own settings, beside which projector writes its hooks: -p may run Bash
            sandbox.file(".claude/settings.json", json.dumps({"permissions": {"allow": ["Bash"]}}, indent=2))

    def marker(self, label: str) -> str:
        """A hook command that appends the payload's session id to markers/<label>."""
        script = "import json, sys; open(sys.argv[1], 'a').write(json.load(sys.stdin)['session_id'] + '\\n')"
        return shlex.join([sys.executable, "-c", script, str(self.markers / label)])

    def sessions(self, label: str) -> list[str]:
        path = self.markers / label
        return path.read_text().split() if path.exists() else []

    def model(self, blocking: bool = False) -> Path:
        guard = '      guard: {event: PreToolUse, command: "echo blocked by the guard of A >&2; exit 2"}\n' if blocking else ""
        return self.sandbox.model(
            f"version: 1\nclients: [{self.client}]\nproviders: {{}}\n"
            f"hooks:\n  mark: {{event: PreToolUse, matcher: Bash|run_shell_command, command: {json.dumps(self.marker('global'))}}}\n"
            f"bindings:\n  {self.a}:\n    hooks:\n"
            f"      mark: {{event: PreToolUse, command: {json.dumps(self.marker('a-override'))}}}\n"
            f"      only-a: {{event: PreToolUse, command: {json.dumps(self.marker('only-a'))}}}\n" + guard
        )

    def sync(self, model: Path) -> None:
        done = self.sandbox.run("sync", config=model)
        assert done.returncode == 0, done.stderr

    def drive(self, folder: Path) -> tuple[str, drivers.Run]:
        """Run the client once in ``folder``: its session id, and the run (what the model was told)."""
        self.ran.unlink(missing_ok=True)
        tool, arguments = SHELL[self.client]
        api = ModelApi().start()
        try:
            api.arguments = arguments(f"touch {self.ran}")
            run = drivers.drive(drivers.DRIVERS[self.client], api, folder, dict(self.env), tool)
        finally:
            api.stop()
        assert run.offered, f"the client never reached the mock model API\n{run.summary()}"
        return _session(self.client, run.log), run


@pytest.fixture(params=CLIENTS)
def desk(request, sandbox) -> Desk:
    return Desk(sandbox, request.param)


def test_a_workspace_runs_its_own_hooks_and_b_the_global_one(desk):
    desk.sync(desk.model())
    in_a, run = desk.drive(desk.a)
    assert desk.ran.exists(), f"the command did not run in A\n{run.summary()}"
    assert desk.sessions("only-a") == [in_a], run.summary()
    assert desk.sessions("a-override") == [in_a], "A's own mark replaces the global one"
    assert desk.sessions("global") == [], "the global mark does not run where A replaces it"

    in_b, run = desk.drive(desk.b)
    assert in_b != in_a
    assert desk.sessions("global") == [in_b], f"B runs the global hook\n{run.summary()}"
    assert desk.sessions("only-a") == [in_a] and desk.sessions("a-override") == [in_a], "A's hooks never run for B"


def test_a_blocking_hook_stops_the_tool_call_and_its_reason_reaches_the_model(desk):
    desk.sync(desk.model(blocking=True))
    in_a, run = desk.drive(desk.a)
    assert not desk.ran.exists(), f"the blocked command ran\n{run.summary()}"
    assert any("blocked by the guard of A" in result for result in run.results), f"{run.results}\n{run.summary()}"
    assert desk.sessions("only-a") == [in_a], "the hooks before the guard ran"

    desk.drive(desk.b)
    assert desk.ran.exists(), "the guard of A does not block in B"


def test_codex_trusts_every_group_a_sync_writes(sandbox):
    """`codex app-server` `hooks/list`: each of projector's groups, one per event Codex has (one of
    them after a group of the user's own), is trusted: the hash projector wrote is Codex's."""
    import tomllib

    from projector.compile import clients

    program = _binary("codex")
    sandbox.install_projector()
    events = [e for e, _ in clients.registry()["codex"].hooks.events]
    hooks = "".join(f"  h{i}: {{event: {e}, command: run-{i}}}\n" for i, e in enumerate(events))
    sandbox.file(".codex/hooks.json", '{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "mine"}]}]}}')
    done = sandbox.run("sync", config=sandbox.model(f"version: 1\nclients: [codex]\nproviders: {{}}\nhooks:\n{hooks}"))
    assert done.returncode == 0, done.stderr
    written = tomllib.loads(sandbox.file(".codex/config.toml").read_text())["hooks"]["state"]
    listed = _hooks_list(program, dict(sandbox.env), sandbox.home)
    ours = {h["key"]: h for h in listed if "projector dispatch" in h["command"]}
    assert sorted(ours) == sorted(written) and len(ours) == len(events)
    assert "hooks.json:stop:1:0" in " ".join(ours), "after the user's own Stop group"
    for key, hook in ours.items():
        assert (hook["trustStatus"], hook["currentHash"]) == ("trusted", written[key]["trusted_hash"]), key


def test_codex_asks_about_a_group_changed_by_hand_until_force_puts_it_back(sandbox):
    """A hand edit of projector's group, kept by sync as drift, is one projector did not write:
    Codex reads it as changed since trusted (skipped until reviewed), never as trusted."""
    program = _binary("codex")
    sandbox.install_projector()
    model = sandbox.model("version: 1\nclients: [codex]\nproviders: {}\nhooks:\n  g: {event: PreToolUse, command: guard}\n")
    assert sandbox.run("sync", config=model).returncode == 0
    path = sandbox.file(".codex/hooks.json")
    path.write_text(path.read_text().replace(' PreToolUse"', ' PreToolUse && touch pwned"'))
    assert sandbox.run("sync", config=model).returncode == 0

    def status() -> list[tuple[str, str]]:
        listed = _hooks_list(program, dict(sandbox.env), sandbox.home)
        return [(h["trustStatus"], "pwned" in h["command"]) for h in listed if "projector dispatch" in h["command"]]

    assert status() == [("modified", True)]
    assert sandbox.run("sync", "--force", config=model).returncode == 0
    assert status() == [("trusted", False)]


def test_a_hook_turned_off_in_codex_stays_off_through_sync_and_force(sandbox):
    """The person turns projector's PreToolUse hook off in Codex's hook review: Codex adds
    ``enabled = false`` to the trust entry's table (its TUI's write_hook_enabled, driven here
    through the same app-server method). That key is theirs: no drift, and neither sync nor
    `sync --force` (which puts projector's hash back after a hand edit) turns the hook on again."""
    program = _binary("codex")
    sandbox.install_projector()
    model = sandbox.model("version: 1\nclients: [codex]\nproviders: {}\nhooks:\n  g: {event: PreToolUse, command: guard}\n"
                          "  s: {event: Stop, command: bye}\n")
    assert sandbox.run("sync", config=model).returncode == 0
    env, config = dict(sandbox.env), sandbox.file(".codex/config.toml")
    key = next(h["key"] for h in _hooks_list(program, env, sandbox.home) if h["eventName"] == "preToolUse")
    off = {"edits": [{"keyPath": "hooks.state", "value": {key: {"enabled": False}}, "mergeStrategy": "upsert"}], "reloadUserConfig": True}
    assert _app_server(program, env, "config/batchWrite", off)["status"] == "ok"
    turned_off = config.read_text()
    assert "enabled = false" in turned_off

    def states() -> list[tuple[str, bool, str]]:
        return sorted((h["eventName"], h["enabled"], h["trustStatus"]) for h in _hooks_list(program, env, sandbox.home))

    assert states() == [("preToolUse", False, "trusted"), ("stop", True, "trusted")]
    status = sandbox.run("status", config=model)
    assert status.returncode == 0 and "drift" not in status.stdout + status.stderr, status.stdout + status.stderr
    assert sandbox.run("sync", "--force", config=model).returncode == 0
    assert config.read_text() == turned_off and states() == [("preToolUse", False, "trusted"), ("stop", True, "trusted")]
    config.write_text(turned_off.replace('trusted_hash = "sha256:', 'trusted_hash = "sha256:0', 1))  # a hand edit of projector's key
    assert sandbox.run("sync", "--force", config=model).returncode == 0
    assert config.read_text() == turned_off, "projector's hash back, the person's choice kept"


def test_codex_exec_skips_a_hook_turned_off_and_leaves_the_trust_entries_as_they_were(sandbox):
    """`codex exec` with projector's PreToolUse and UserPromptSubmit groups, PreToolUse turned off
    in Codex's hook review, after `sync --force`: only UserPromptSubmit's hook runs, and the run
    writes nothing into config.toml (Codex does not rewrite hook state when it starts)."""
    desk = Desk(sandbox, "codex")
    model = sandbox.model(f"version: 1\nclients: [codex]\nproviders: {{}}\nhooks:\n"
                          f"  pre: {{event: PreToolUse, command: {json.dumps(desk.marker('pre'))}}}\n"
                          f"  prompt: {{event: UserPromptSubmit, command: {json.dumps(desk.marker('prompt'))}}}\n")
    desk.sync(model)
    program, config = _binary("codex"), sandbox.file(".codex/config.toml")
    key = next(h["key"] for h in _hooks_list(program, desk.env, desk.a) if h["eventName"] == "preToolUse")
    off = {"edits": [{"keyPath": "hooks.state", "value": {key: {"enabled": False}}, "mergeStrategy": "upsert"}], "reloadUserConfig": True}
    assert _app_server(program, desk.env, "config/batchWrite", off)["status"] == "ok"
    assert sandbox.run("sync", "--force", config=model).returncode == 0
    turned_off = config.read_text()
    session, run = desk.drive(desk.a)
    assert desk.ran.exists(), f"the command did not run\n{run.summary()}"
    assert desk.sessions("prompt") == [session], run.summary()
    assert desk.sessions("pre") == [], "the hook turned off in Codex stays off"
    assert config.read_text() == turned_off


def _hooks_list(program: Path, env: dict[str, str], cwd: Path) -> list[dict]:
    """The hooks a real codex sees for ``cwd``."""
    return [hook for entry in _app_server(program, env, "hooks/list", {"cwds": [str(cwd)]})["data"] for hook in entry["hooks"]]


def _app_server(program: Path, env: dict[str, str], method: str, params: dict) -> dict:
    """A real codex's answer to one request of its app-server's JSON-RPC over stdio."""
    process = subprocess.Popen([str(program), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=env, start_new_session=True)
    import threading

    watchdog = threading.Timer(drivers.TIMEOUT, lambda: os.killpg(process.pid, signal.SIGKILL))  # a hung app-server ends the read
    watchdog.start()
    try:
        messages = [{"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "projector-tests", "version": "0"}}},
                    {"method": "initialized"}, {"id": 2, "method": method, "params": params}]
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, f"codex app-server ended without answering {method}"
            answer = json.loads(line)
            if answer.get("id") == 2:
                assert "result" in answer, answer
                return answer["result"]
    finally:
        watchdog.cancel()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
