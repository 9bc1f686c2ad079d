"""Hooks per workspace through real clients (issue 16's acceptance).

The model has a global PreToolUse hook ``mark``; workspace A replaces it (same name) and adds
``only-a``; folder B is in no workspace, so it inherits the global one. Each client runs headless
(`claude -p`, `codex exec`, `copilot -p`, `gemini -p`) against a mock model API that asks for one shell command, with the
hook entries `projector sync` wrote and nothing else. Every hook appends the payload's session id
to a marker file of its own, so a marker says which hooks ran in which session. Then A gets a
hook that blocks: the command does not run, and the reason reaches the model. The global hook's
matcher names each client's shell tool (Bash; Gemini CLI's run_shell_command).
"""

from __future__ import annotations

import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import paths
import pytest
from hook_model_api import ModelApi

sys.path.insert(0, str(paths.TOOLS))
import npm_tools  # noqa: E402

TIMEOUT = 120  # seconds a client run may take (a run takes 3-10 s)
CLIENTS = ["claude-code", "codex", "copilot", "gemini"]
BINARIES = {"claude-code": "claude", "codex": "codex", "copilot": "copilot", "gemini": "gemini"}


def _binary(client: str) -> Path:
    name = BINARIES[client]
    missing = npm_tools.missing_reason() or (None if npm_tools.binary(name) else f"{name} is not among the npm test tools")
    if missing and os.environ.get("CI") == "true":
        pytest.fail(missing)
    if missing:
        pytest.skip(missing)
    found = npm_tools.binary(name)
    assert found is not None
    return found


def _command(client: str, program: Path, api: ModelApi) -> tuple[list[str], dict[str, str]]:
    prompt = "run the command"
    if client == "claude-code":
        return ([str(program), "-p", prompt, "--allowedTools", "Bash", "--output-format", "json"],
                {"ANTHROPIC_BASE_URL": api.url, "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                 "DISABLE_TELEMETRY": "1"})
    if client == "copilot":
        return ([str(program), "-p", prompt, "--allow-all-tools", "--no-auto-update", "--output-format", "json", "--disable-builtin-mcps"],
                {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": api.url, "COPILOT_PROVIDER_TYPE": "anthropic",
                 "COPILOT_PROVIDER_API_KEY": "dummy", "COPILOT_MODEL": "claude-sonnet-4.5", "COPILOT_AUTO_UPDATE": "false"})
    if client == "gemini":
        # -m: no model-router side request; --skip-trust: the folder is trusted for this session
        return ([str(program), "-p", prompt, "--yolo", "--output-format", "json", "-m", "gemini-2.5-flash", "--skip-trust"],
                {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": api.url})
    provider = f'{{name="mock", base_url="{api.url}/v1", wire_api="responses", env_key="MOCK_API_KEY", supports_websockets=false}}'
    overrides = ['model="mock-model"', 'model_provider="mock"', f"model_providers.mock={provider}", 'approval_policy="never"',
                 'sandbox_mode="danger-full-access"', "features.plugins=false", "check_for_update_on_startup=false",
                 'otel.metrics_exporter="none"']
    return ([str(program), "exec", "--skip-git-repo-check", "--json", *(w for o in overrides for w in ("-c", o)), prompt],
            {"MOCK_API_KEY": "dummy"})


def _session(client: str, stdout: str) -> str:
    """The session id the client reports for its run."""
    if client == "gemini":  # one JSON document
        return json.loads(stdout[stdout.index("{"):])["session_id"]
    for line in stdout.splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if client == "claude-code" and isinstance(event, dict) and event.get("session_id"):
            return event["session_id"]
        if client == "codex" and isinstance(event, dict) and event.get("type") == "thread.started":
            return event["thread_id"]
        if client == "copilot" and isinstance(event, dict) and event.get("type") == "result":
            return event["sessionId"]
    raise AssertionError(f"no session id in the output:\n{stdout[-3000:]}")


class Desk:
    def __init__(self, sandbox, client: str):
        self.sandbox, self.client = sandbox, client
        self.program = _binary(client)
        sandbox.install_projector()
        self.a = sandbox.home / "work" / "a"
        self.b = sandbox.home / "work" / "b"
        self.markers = sandbox.root / "markers"
        for folder in (self.a, self.b, self.markers):
            folder.mkdir(parents=True)
        self.ran = sandbox.root / "tool-ran"
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        self.env = dict(sandbox.env, PATH=f"{sandbox.bin}:{node}:/usr/bin:/bin", CI="1", TERM="dumb", NO_COLOR="1")
        if client == "gemini":  # the user's own settings, beside which projector writes its hooks
            sandbox.file(".gemini/settings.json", json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}},
                                                               "general": {"enableAutoUpdate": False}}, indent=2))
        if client == "copilot":
            link = Path(self.env["XDG_CACHE_HOME"]) / "copilot" / "pkg"
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(_copilot_package(self.program, self.env))

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

    def drive(self, folder: Path) -> tuple[str, ModelApi, str]:
        """Run the client once in ``folder``: (its session id, the mock it talked to, its output)."""
        self.ran.unlink(missing_ok=True)
        api = ModelApi(f"touch {self.ran}")
        try:
            command, extra = _command(self.client, self.program, api)
            process = subprocess.Popen(command, cwd=folder, env=self.env | extra, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True, start_new_session=True)
            try:
                out, err = process.communicate(timeout=TIMEOUT)
            finally:
                try:
                    os.killpg(process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        finally:
            api.stop()
        log = f"{self.client} exited {process.returncode}\n--- stdout\n{out[-3000:]}\n--- stderr\n{err[-3000:]}"
        assert api.bodies, f"the client never reached the mock model API\n{log}"
        return _session(self.client, out), api, log


def _copilot_package(program: Path, env: dict[str, str]) -> Path:
    """Copilot CLI unpacks 235 MB into $XDG_CACHE_HOME/copilot/pkg at its first start: once per
    tools install, linked into each run's cache (the folder issue 17's drivers use too)."""
    shared = npm_tools.cache() / "e2e" / "copilot-cache"
    shared.parent.mkdir(parents=True, exist_ok=True)
    with open(shared.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / "copilot" / "pkg").is_dir():
            subprocess.run([str(program), "--version"], env={"HOME": str(shared), "XDG_CACHE_HOME": str(shared), "PATH": env["PATH"]},
                           capture_output=True, timeout=TIMEOUT, check=True)
    return shared / "copilot" / "pkg"


@pytest.fixture(params=CLIENTS)
def desk(request, sandbox) -> Desk:
    return Desk(sandbox, request.param)


def test_a_workspace_runs_its_own_hooks_and_b_the_global_one(desk):
    desk.sync(desk.model())
    in_a, _, log = desk.drive(desk.a)
    assert desk.ran.exists(), f"the command did not run in A\n{log}"
    assert desk.sessions("only-a") == [in_a], log
    assert desk.sessions("a-override") == [in_a], "A's own mark replaces the global one"
    assert desk.sessions("global") == [], "the global mark does not run where A replaces it"

    in_b, _, log = desk.drive(desk.b)
    assert in_b != in_a
    assert desk.sessions("global") == [in_b], f"B runs the global hook\n{log}"
    assert desk.sessions("only-a") == [in_a] and desk.sessions("a-override") == [in_a], "A's hooks never run for B"


def test_a_blocking_hook_stops_the_tool_call_and_its_reason_reaches_the_model(desk):
    desk.sync(desk.model(blocking=True))
    in_a, api, log = desk.drive(desk.a)
    assert not desk.ran.exists(), f"the blocked command ran\n{log}"
    assert any("blocked by the guard of A" in result for result in api.tool_results()), f"{api.tool_results()}\n{log}"
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


def _hooks_list(program: Path, env: dict[str, str], cwd: Path) -> list[dict]:
    """The hooks a real codex sees for ``cwd`` (its app-server's JSON-RPC over stdio)."""
    process = subprocess.Popen([str(program), "app-server"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, env=env, start_new_session=True)
    import threading

    watchdog = threading.Timer(TIMEOUT, lambda: os.killpg(process.pid, signal.SIGKILL))  # a hung app-server ends the read
    watchdog.start()
    try:
        messages = [{"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "projector-tests", "version": "0"}}},
                    {"method": "initialized"}, {"id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}}]
        process.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
        process.stdin.flush()
        while True:
            line = process.stdout.readline()
            assert line, "codex app-server ended without answering hooks/list"
            answer = json.loads(line)
            if answer.get("id") == 2:
                return [hook for entry in answer["result"]["data"] for hook in entry["hooks"]]
    finally:
        watchdog.cancel()
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
