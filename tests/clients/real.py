"""The real client CLIs (pinned in tests/tools/package.json) as readers of what projector wrote.

Each call runs with the test's HOME, a PATH that holds only `node`, `git` and the sandbox's own
`projector`, CI=1, TERM=dumb, NO_COLOR=1, MCP_TIMEOUT=3000, a timeout, and a process group of its
own that is killed afterwards (Claude Code health-checks servers and may leave them running).

Every client's answer is reduced to one shape, so a test compares it with projector's plan:
    {name: {"transport": "stdio"|"http", "command", "args", "url", "token"}}
where ``token`` is the NAME of the variable the entry passes on (None: none).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path
from typing import Any

import npm_tools

Entry = dict[str, Any]


def tool_path() -> Path:
    """A folder with `node` and `git` only, so `npx`, `uvx`, `python` in users' entries are not found."""
    folder = npm_tools.cache() / "minimal-path"
    if not folder.exists():
        folder.mkdir()
        for name in ("node", "git"):
            found = shutil.which(name)
            if found:
                (folder / name).symlink_to(found)
    return folder


def run(home: Path, cwd: Path, command: list[str], extra_path: str = "", extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "PATH": ":".join(p for p in (str(tool_path()), extra_path) if p),
        "CI": "1",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "MCP_TIMEOUT": "3000",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **(extra_env or {}),
    }
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = process.communicate(timeout=120)
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return subprocess.CompletedProcess(command, process.returncode, out, err)


def _bin(name: str) -> str:
    found = npm_tools.binary(name)
    assert found is not None, f"{name} is not installed"
    return str(found)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args[0]} failed: {done.stderr[-1500:]}"
    return done.stdout


# --------------------------------------------------------------------------- one reader per client


def codex(home: Path, cwd: Path) -> dict[str, Entry]:
    listed = json.loads(_ok(run(home, cwd, [_bin("codex"), "mcp", "list", "--json"])))
    entries = {}
    for item in listed:
        transport = item["transport"]
        if transport["type"] == "stdio":
            names = transport.get("env_vars") or []
            entries[item["name"]] = _entry("stdio", command=transport["command"], args=transport.get("args") or [],
                                           token=names[0] if names else None)
        else:
            entries[item["name"]] = _entry("http", url=transport["url"], token=transport.get("bearer_token_env_var"))
    return entries


def copilot(home: Path, cwd: Path) -> dict[str, Entry]:
    listed = json.loads(_ok(run(home, cwd, [_bin("copilot"), "mcp", "list", "--json"])))["mcpServers"]
    return {name: _from_json(item, "${", "}") for name, item in listed.items()}


def opencode(home: Path, cwd: Path) -> dict[str, Entry]:
    config = json.loads(_ok(run(home, cwd, [_bin("opencode"), "debug", "config"])))
    entries = {}
    for name, item in (config.get("mcp") or {}).items():
        if item.get("type") == "local":
            command = item["command"]
            entries[name] = _entry("stdio", command=command[0], args=command[1:], token=_ref_name(item.get("environment"), "{env:", "}"))
        else:
            # opencode masks header values ("***") and substitutes {env:X} at load: the presence of
            # the header is what it can show.
            token = "<masked>" if (item.get("headers") or {}).get("Authorization") else None
            entries[name] = _entry("http", url=item["url"], token=token)
    return entries


def claude(home: Path, cwd: Path) -> dict[str, Entry]:
    listing = _ok(run(home, cwd, [_bin("claude"), "mcp", "list"]))
    names = re.findall(r"^([\w-]+): .* - ", listing, flags=re.M)
    return {name: _claude_get(home, cwd, name) for name in names}


def _claude_get(home: Path, cwd: Path, name: str) -> Entry:
    text = _ok(run(home, cwd, [_bin("claude"), "mcp", "get", name]))
    field = dict(re.findall(r"^  (Type|Command|Args|URL): (.*)$", text, flags=re.M))
    references = re.findall(r"^    \S+?[=:] ?(?:Bearer )?\$\{(\w+)\}$", text, flags=re.M)
    token = references[0] if references else None
    if field.get("Type") == "stdio":
        return _entry("stdio", command=field.get("Command"), args=field.get("Args", "").split(), token=token)
    return _entry("http", url=field.get("URL"), token=token)


def _listed(text: str) -> dict[str, Entry]:
    """Gemini's and Qwen's `mcp list`: `<mark> name: command args (stdio) - Status` or
    `<mark> name: url (http) - Status`. Neither shows env or headers: the token cannot be read."""
    entries = {}
    for name, target, transport in re.findall(r"^\S+ ([\w.-]+): (.*) \((stdio|http|sse)\) - \S+", _plain(text), flags=re.M):
        if transport == "stdio":
            command, *args = target.split(" ")
            entries[name] = _entry("stdio", command=command, args=args)
        else:
            entries[name] = _entry(transport, url=target)
    return entries


def _plain(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def gemini(home: Path, cwd: Path) -> dict[str, Entry]:
    done = run(home, cwd, [_bin("gemini"), "mcp", "list"])
    _ok(done)
    return _listed(done.stderr)  # Gemini prints its list on stderr


def qwen(home: Path, cwd: Path) -> dict[str, Entry]:
    return _listed(_ok(run(home, cwd, [_bin("qwen"), "mcp", "list"])))


def amp(home: Path, cwd: Path) -> dict[str, Entry]:
    listed = json.loads(_ok(run(home, cwd, [_bin("amp"), "mcp", "list", "--json"])))
    return {item["name"]: _from_json(item["spec"], "${", "}") for item in listed}


def cline(home: Path, cwd: Path) -> dict[str, Entry]:
    """`cline config mcp --json`: each entry's name and transport, as @cline/core parsed it
    (an entry it cannot parse fails the command)."""
    listed = json.loads(_ok(run(home, cwd, [_bin("cline"), "config", "mcp", "--json"])) or "[]")
    transports = {"stdio": "stdio", "streamableHttp": "http", "sse": "sse"}  # a url without a type is SSE to it
    return {item["name"]: _entry(transports.get(item["transportType"], item["transportType"])) for item in listed}


def auggie(home: Path, cwd: Path) -> dict[str, Entry]:
    """`auggie mcp list --json`: the user's entries (source "user"), a stdio one's command line
    joined with spaces. It warns on stderr that it cannot reach its service: the list is local."""
    listed = json.loads(_ok(run(home, cwd, [_bin("auggie"), "mcp", "list", "--json"])))["servers"]
    entries = {}
    for item in (i for i in listed if i.get("source") == "user"):
        if item["transport"] == "stdio":
            command, *args = item["command"].split(" ")
            entries[item["name"]] = _entry("stdio", command=command, args=args)
        else:
            entries[item["name"]] = _entry("http", url=item["url"])
    return entries


READERS = {"codex": codex, "copilot": copilot, "opencode": opencode, "claude-code": claude, "gemini": gemini, "qwen": qwen, "amp": amp,
           "cline": cline, "augment": auggie}
# Readers that cannot show which variable an entry passes on (its env, its headers).
BLIND = {"gemini", "qwen", "augment"}
# Readers that show each entry's name and transport only.
SHALLOW = {"cline"}


# --------------------------------------------------------------------------- shapes


def _entry(transport: str, *, command: str | None = None, args: list[str] | None = None, url: str | None = None, token: str | None = None) -> Entry:
    return {"transport": transport, "command": command, "args": list(args or []), "url": url, "token": token}


def _from_json(item: dict[str, Any], opening: str, closing: str) -> Entry:
    if item.get("url"):
        authorization = (item.get("headers") or {}).get("Authorization", "")
        return _entry("http", url=item["url"], token=_ref_name({"h": authorization}, opening, closing))
    return _entry("stdio", command=item.get("command"), args=item.get("args"), token=_ref_name(item.get("env"), opening, closing))


def _ref_name(values: dict[str, str] | None, opening: str, closing: str) -> str | None:
    for value in (values or {}).values():
        found = re.search(re.escape(opening) + r"(\w+)" + re.escape(closing), value)
        if found:
            return found.group(1)
    return None


def planned(servers: list[tuple[str, Any]], client: str) -> dict[str, Entry]:
    """What each client should show for projector's plan (client-neutral servers)."""
    from projector.compile.clients import registry
    from projector.compile.plan import StdioServer

    descriptor = registry()[client]
    # a client that hands the whole environment to stdio servers gets no reference in their entries
    passes = descriptor.stdio_env != "inherit" and client not in BLIND
    expected = {}
    for name, server in servers:
        if client in SHALLOW:
            expected[name] = _entry("stdio" if isinstance(server, StdioServer) else "http")
            continue
        if isinstance(server, StdioServer):
            token = server.pass_env[0] if server.pass_env and passes and descriptor.can_pass(server.pass_env[0]) else None
            expected[name] = _entry("stdio", command=server.command, args=list(server.args), token=token)
        else:
            token = server.token_env if client not in BLIND else None
            if client == "opencode":
                token = "<masked>" if server.token_env else None
            expected[name] = _entry("http", url=server.url, token=token)
    return expected
