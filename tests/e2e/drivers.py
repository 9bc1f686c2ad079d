"""One driver per real client: run it once, headless, in a folder, against the mock model API.

A run starts the client the way a desktop launcher would — the environment the test gives (HOME,
PATH, the token variable) plus only what points the client at the mock — waits for it to end,
kills its process group, and returns what the model was offered and the client's own log.

The MCP entries are the ones ``projector sync`` wrote. What a driver adds lives outside those
files: command-line flags, environment variables, and per-run settings files the client reads
besides the user's own (a system settings file, inline config). Where a client would send its
first model request before its MCP servers are up, the driver makes it wait for them.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import npm_tools
from model_apis import ModelApi

PROMPT = "Use the tools you have."
TIMEOUT = 120  # seconds; a run takes 2-10 s
MCP_STARTUP = 60  # seconds a client waits for an MCP server to start (a loaded machine is slow)
Json = dict[str, Any]


@dataclass(frozen=True)
class Run:
    client: str
    returncode: int | None
    offered: dict[str, Json]  # every tool offered at the model's first turn: name -> parameter schema
    results: tuple[str, ...]  # the tool results the model was given
    log: str  # the client's stdout, stderr and log files
    prefix: str  # how the client names server S's tools: prefix.format(server=S) + tool

    def tools(self, server: str) -> dict[str, Json]:
        """The tools of MCP server ``server`` the model was offered, by their MCP names."""
        head = self.prefix.format(server=server)
        return {name[len(head):]: schema for name, schema in self.offered.items() if name.startswith(head)}

    def report(self) -> Json:
        """The report_server's answer (cwd, env, argv, pid) among the tool results."""
        return self.answer_with("cwd")

    def answer_with(self, key: str) -> Json:
        """The first JSON object among the tool results that has ``key``."""
        for text in self.results:
            found = _object_with(text, key)
            if found is not None:
                return found
        raise AssertionError(f"no answer with {key!r} among the tool results {self.results!r}\n{self.summary()}")

    def summary(self) -> str:
        """For a failed assertion: what was offered, and the end of the client's log."""
        return f"{self.client} exited {self.returncode}; offered {sorted(self.offered)}\n--- its log:\n{self.log[-4000:]}"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _object_with(text: str, key: str) -> Json | None:
    """The first JSON object in ``text`` that has ``key``, also inside JSON-encoded strings (a
    client may wrap a tool's text in its own JSON or markup)."""
    decoder = json.JSONDecoder()
    for start in (i for i, c in enumerate(text) if c in "{\""):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        for candidate in _walk(value):
            if isinstance(candidate, dict) and key in candidate:
                return candidate
            if isinstance(candidate, str) and key in candidate:
                inner = _object_with(candidate, key)
                if inner is not None:
                    return inner
    return None


def _walk(value: Any):
    yield value
    if isinstance(value, dict):
        for inner in value.values():
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


@dataclass(frozen=True)
class Driver:
    id: str  # the client descriptor (clients/<id>.yaml)
    binary: str  # its command in the npm test tools
    prefix: str  # how it names an MCP server's tools for the model
    variables: dict[str, str] = field(default_factory=dict)  # fixed; "{api}" is the mock's URL

    def environ(self, api: ModelApi) -> dict[str, str]:
        return {name: value.format(api=api.url) for name, value in self.variables.items()}

    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        raise NotImplementedError

    def prepare(self, program: str, env: dict[str, str]) -> None:
        """Anything the run needs in HOME before it starts."""

    def logs(self, env: dict[str, str]) -> str:
        """The client's own log files, when it keeps any."""
        return ""

    def unusable(self) -> str | None:
        """Why this machine cannot run the client's tests as they are set up (None: it can)."""
        return None


def insecure_for_gemini(path: Path) -> str | None:
    """Why Gemini CLI ignores a system settings file at ``path`` (None: it reads it). As its
    isFileAndDirectorySecureSync (0.61.0, bundle/chunk-*.js) checks: the file and every folder
    above it must belong to root (uid 0) and be writable by no group and no other user."""
    for place in (path, *path.parents):
        try:
            info = place.stat()
        except OSError:
            continue  # not made yet: made below the last one that is there, by this process
        if info.st_uid != 0:
            return f"{place} does not belong to root"
        if info.st_mode & 0o022:
            return f"{place} is writable by group or others (mode {info.st_mode & 0o7777:o})"
    return None


class ClaudeCode(Driver):
    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        # -p asks before an MCP tool runs, and bypassPermissions is refused to root: allow each server
        path = Path(env.get("CLAUDE_CONFIG_DIR") or env["HOME"]) / ".claude.json"
        servers = json.loads(path.read_text()).get("mcpServers", {}) if path.exists() else {}
        allowed = [f"mcp__{name}" for name in servers]
        return [program, "-p", PROMPT, "--output-format", "json", "--debug", *(["--allowedTools", *allowed] if allowed else [])]

    def logs(self, env: dict[str, str]) -> str:
        latest = Path(env.get("CLAUDE_CONFIG_DIR") or Path(env["HOME"]) / ".claude") / "debug" / "latest"
        return latest.read_text(errors="replace") if latest.exists() else ""


class Codex(Driver):
    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        provider = f'{{name="mock", base_url="{api.url}/v1", wire_api="responses", env_key="MOCK_API_KEY", supports_websockets=false}}'
        overrides = ['model="mock-model"', 'model_provider="mock"', f"model_providers.mock={provider}",
                     'approval_policy="never"', 'sandbox_mode="danger-full-access"',
                     # no startup sync of the curated plugins (github.com, chatgpt.com), no release check, no
                     # metrics to ab.chatgpt.com
                     "features.plugins=false", "check_for_update_on_startup=false", 'otel.metrics_exporter="none"']
        # `codex exec` sends its first request without waiting for MCP servers unless they are
        # required: require every server the file lists, for this run only.
        overrides += [f"mcp_servers.{name}.{setting}" for name in _codex_servers(env)
                      for setting in ("required=true", f"startup_timeout_sec={MCP_STARTUP}")]
        return [program, "exec", "--skip-git-repo-check", *(word for o in overrides for word in ("-c", o)), PROMPT]


def _codex_servers(env: dict[str, str]) -> list[str]:
    path = Path(env.get("CODEX_HOME") or Path(env["HOME"]) / ".codex") / "config.toml"
    if not path.exists():
        return []
    return list(tomllib.loads(path.read_text()).get("mcp_servers", {}))


class OpenCode(Driver):
    def environ(self, api: ModelApi) -> dict[str, str]:
        # The model provider comes inline (OPENCODE_CONFIG_CONTENT), merged over the user's file.
        provider = {"npm": "@ai-sdk/openai-compatible", "name": "Mock", "options": {"baseURL": f"{api.url}/v1", "apiKey": "dummy"},
                    "models": {"mock-model": {"name": "Mock", "tool_call": True}}}
        inline = {"provider": {"mock": provider}, "model": "mock/mock-model", "small_model": "mock/mock-model",
                  "autoupdate": False, "share": "disabled"}
        return super().environ(api) | {"OPENCODE_CONFIG_CONTENT": json.dumps(inline)}

    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        return [program, "run", "--format", "json", "--print-logs", "--log-level", "INFO", PROMPT]


class Copilot(Driver):
    def prepare(self, program: str, env: dict[str, str]) -> None:
        # Its first start unpacks 235 MB into $XDG_CACHE_HOME/copilot/pkg (1.2 s): once per
        # tools install, shared by every run's HOME through a link.
        shared = npm_tools.cache() / "e2e" / "copilot-cache"
        with _locked(shared.with_suffix(".lock")):
            if not (shared / "copilot" / "pkg").is_dir():
                subprocess.run([program, "--version"], env={"HOME": str(shared), "XDG_CACHE_HOME": str(shared), "PATH": env["PATH"]},
                               capture_output=True, timeout=TIMEOUT, check=True)
        link = Path(env.get("XDG_CACHE_HOME") or Path(env["HOME"]) / ".cache") / "copilot" / "pkg"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(shared / "copilot" / "pkg")

    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        return [program, "-p", PROMPT, "--allow-all-tools", "--no-auto-update", "--output-format", "json",
                "--disable-builtin-mcps", "--no-ask-user", "--log-level", "info"]

    def logs(self, env: dict[str, str]) -> str:
        folder = Path(env.get("COPILOT_HOME") or Path(env["HOME"]) / ".copilot") / "logs"
        return "".join(p.read_text(errors="replace") for p in sorted(folder.glob("*.log"))) if folder.is_dir() else ""


@dataclass(frozen=True)
class SettingsFileClient(Driver):
    """Gemini CLI and Qwen Code: per-run settings in a system settings file (an environment
    variable names it), which they lay over the user's own ~/.gemini or ~/.qwen settings."""

    settings_variable: str = ""
    settings: Json = field(default_factory=dict)
    flags: tuple[str, ...] = ()
    root_only_settings: bool = False  # the client reads the file only where root alone can write (Gemini)

    @property
    def settings_path(self) -> Path:
        # beside the npm tools, under the real HOME's cache (never below /tmp, which Gemini refuses)
        return npm_tools.cache() / "e2e" / f"{self.id}-system-settings.json"

    def unusable(self) -> str | None:
        why = insecure_for_gemini(self.settings_path) if self.root_only_settings else None
        return (f"{self.id} would ignore its system settings file {self.settings_path} ({why}), so it could not "
                "sign in to the mock model API: run the tests as root with HOME where only root can write") if why else None

    def environ(self, api: ModelApi) -> dict[str, str]:
        path = self.settings_path
        text = json.dumps(self.settings)
        if not path.exists() or path.read_text() != text:
            path.parent.mkdir(mode=0o755, exist_ok=True)
            fresh = path.with_name(f"{path.name}.{os.getpid()}")
            fresh.write_text(text)
            fresh.chmod(0o644)
            fresh.replace(path)  # whole, for a worker that reads it meanwhile
        return super().environ(api) | {self.settings_variable: str(path)}

    def command(self, program: str, env: dict[str, str], api: ModelApi) -> list[str]:
        return [program, "-p", PROMPT, "--yolo", "--output-format", "json", *self.flags]


DRIVERS: dict[str, Driver] = {d.id: d for d in (
    ClaudeCode("claude-code", "claude", "mcp__{server}__", {
        "ANTHROPIC_BASE_URL": "{api}", "ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        # -p sends its first request without waiting for MCP servers unless this is false
        # (for at most MCP_CONNECT_TIMEOUT_MS, 5 s by default)
        "MCP_CONNECTION_NONBLOCKING": "0", "MCP_CONNECT_TIMEOUT_MS": str(MCP_STARTUP * 1000), "MCP_TIMEOUT": str(MCP_STARTUP * 1000)}),
    Codex("codex", "codex", "mcp__{server}__", {"MOCK_API_KEY": "dummy"}),
    OpenCode("opencode", "opencode", "{server}_", {
        "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1", "OPENCODE_DISABLE_SHARE": "1",
        # its background `npm install @opencode-ai/plugin` asks this registry: a closed loopback port
        "npm_config_registry": "http://127.0.0.1:9/"}),
    Copilot("copilot", "copilot", "{server}-", {
        "COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": "{api}/v1", "COPILOT_PROVIDER_API_KEY": "dummy",
        "COPILOT_MODEL": "mock-model", "COPILOT_AUTO_UPDATE": "false"}),
    SettingsFileClient(
        "gemini", "gemini", "mcp_{server}_", {"GEMINI_API_KEY": "dummy", "GOOGLE_GEMINI_BASE_URL": "{api}"},
        settings_variable="GEMINI_CLI_SYSTEM_SETTINGS_PATH",
        settings={"security": {"auth": {"selectedType": "gemini-api-key"}}, "privacy": {"usageStatisticsEnabled": False},
                  "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}},
        # -m: no model-router side request; --skip-trust: the folder is trusted for this session
        flags=("-m", "gemini-2.5-flash", "--skip-trust"), root_only_settings=True),
    SettingsFileClient(
        "qwen", "qwen", "mcp__{server}__", {"OPENAI_API_KEY": "dummy", "OPENAI_BASE_URL": "{api}/v1", "OPENAI_MODEL": "mock-model"},
        settings_variable="QWEN_CODE_SYSTEM_SETTINGS_PATH",
        settings={"security": {"auth": {"selectedType": "openai"}}, "privacy": {"usageStatisticsEnabled": False},
                  "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                  # no background memory agents: a model turn of their own after the answer
                  "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False, "enableAutoSkill": False},
                  "tools": {"toolSearch": {"enabled": False}}}),  # MCP tools offered to the model, not behind a search tool
)}


def drive(driver: Driver, api: ModelApi, folder: Path, env: dict[str, str], call: str | None = None) -> Run:
    """Run the client once in ``folder``; ``call``: a tool (by a part of its name) the model calls."""
    program = npm_tools.binary(driver.binary)
    assert program is not None, f"{driver.binary} is not installed"
    env = env | driver.environ(api)
    driver.prepare(str(program), env)
    api.forget()
    api.call = call
    process = subprocess.Popen(driver.command(str(program), env, api), cwd=folder, env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        err += f"\n[driver] killed after {TIMEOUT} s"
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # MCP servers it left behind
        except ProcessLookupError:
            pass
    return Run(driver.id, process.returncode, api.offered(), tuple(api.results()), f"{out}\n{err}\n{driver.logs(env)}", driver.prefix)
