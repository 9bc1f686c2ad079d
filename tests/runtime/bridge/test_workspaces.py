"""The workspace runtime, driven through the bridge by the official MCP client: local servers
owned by a workspace, the same name in two projects, a global server turned off in one, direnv
overlays, trusted project files, symlinks and git worktrees.

The local server is ``tests/servers/report_server.py`` (official SDK), whose one tool reports
its folder and environment; ``REPORT_SPAWN_LOG`` records every start.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from contextlib import AsyncExitStack
from pathlib import Path

import paths
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

SERVER = paths.SERVERS / "report_server.py"
CANARY = "canary-7f3a-value"  # a value that must never appear in projector's output


class World:
    """A sandbox HOME with workspaces a and b, a model, and the bridge's environment."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.a, self.b = self.home / "work" / "a", self.home / "work" / "b"
        for folder in (self.a, self.b, self.home / "elsewhere"):
            folder.mkdir(parents=True)
        self.config = root / "projector.yaml"
        self.spawns = root / "spawns.jsonl"
        self.log = root / "bridge.log"
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",  # projector is on PATH
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_DATA_HOME": str(root / "data"),
            "XDG_CACHE_HOME": str(root / "cache"),
            "REPORT_SPAWN_LOG": str(self.spawns),
            "BASE_ONLY": "from-the-client",
        }

    def server(self, *args: str) -> str:
        """A provider body running the report server with ``args``."""
        return f"command: {sys.executable}\n    args: [{SERVER}{''.join(', ' + a for a in args)}]"

    def model(self, text: str) -> None:
        self.config.write_text("version: 1\n" + text)

    def params(self, provider: str, folder: Path) -> StdioServerParameters:
        args = ["-m", "projector", "mcp", "--provider", provider, "--config", str(self.config), "--log-file", str(self.log)]
        return StdioServerParameters(command=sys.executable, args=args, env=self.env, cwd=str(folder))

    def session(self, provider: str, folder: Path, work):
        async def run():
            async with Client(self.params(provider, folder)) as client:
                return await work(client)

        return asyncio.run(run())

    def report(self, provider: str, folder: Path) -> tuple[list[str], dict | None]:
        """(tool names, the first tool's report) of one session."""

        async def work(client):
            names = [t.name for t in (await client.list_tools()).tools]
            if not names:
                return names, None
            called = await client.call_tool(names[0], {})
            return names, json.loads(called.content[0].text)

        return self.session(provider, folder, work)

    def started(self) -> list[dict]:
        return [json.loads(line) for line in self.spawns.read_text().splitlines()] if self.spawns.exists() else []

    def projector(self, *args: str, folder: Path | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "projector", *args], cwd=folder or self.home, env=self.env,
                              capture_output=True, text=True, timeout=60, check=False)

    def logged(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@pytest.fixture
def world(tmp_path) -> World:
    return World(tmp_path)


async def _call_fails(client, tool: str) -> bool:
    try:
        result = await client.call_tool(tool, {})
    except MCPError:
        return True
    return bool(result.is_error)


def test_project_only_server_is_seen_in_its_workspace_and_nothing_starts_elsewhere(world):
    world.model(
        f"providers:\n  notes:\n    {world.server('--tool', 'notes_report')}\n    enabled: false\n"
        f"bindings:\n  {world.a}:\n    notes:\n      enabled: true\n      env: {{A_SECRET: {CANARY}}}\n"
    )
    names, report = world.report("notes", world.a)
    assert names == ["notes_report"]
    assert report["cwd"] == str(world.a) and report["env"]["A_SECRET"] == CANARY

    async def from_b(client):
        tools = (await client.list_tools()).tools
        return tools, await _call_fails(client, "notes_report")

    tools, failed = world.session("notes", world.b, from_b)
    assert tools == [] and failed
    assert [s["cwd"] for s in world.started()] == [str(world.a)]  # B started nothing
    assert CANARY not in world.logged()


def test_same_name_in_two_projects_runs_each_workspace_definition_side_by_side(world):
    world.model(
        f"providers:\n  tool:\n    {world.server()}\n"
        f"bindings:\n"
        f"  {world.a}:\n    tool: {{args: [{SERVER}, --tool, alpha], env: {{WHO: a}}}}\n"
        f"  {world.b}:\n    tool: {{args: [{SERVER}, --tool, beta], env: {{WHO: b}}}}\n"
    )

    async def both():
        async with AsyncExitStack() as outer:
            b = await outer.enter_async_context(Client(world.params("tool", world.b)))
            async with Client(world.params("tool", world.a)) as a:
                listed = await asyncio.gather(a.list_tools(), b.list_tools())
                reports = await asyncio.gather(a.call_tool("alpha", {}), b.call_tool("beta", {}))
            after = await b.call_tool("beta", {})  # A's session has ended; B's goes on
            return listed, [json.loads(r.content[0].text) for r in reports], json.loads(after.content[0].text)

    listed, (in_a, in_b), later = asyncio.run(both())
    assert [[t.name for t in tools.tools] for tools in listed] == [["alpha"], ["beta"]]
    assert (in_a["cwd"], in_a["env"]["WHO"]) == (str(world.a), "a")
    assert (in_b["cwd"], in_b["env"]["WHO"]) == (str(world.b), "b")
    assert in_a["pid"] != in_b["pid"] and later["pid"] == in_b["pid"]


def test_a_global_server_turned_off_in_one_workspace_runs_in_the_other(world):
    world.model(
        f"providers:\n  everywhere:\n    {world.server()}\n"
        f"bindings:\n  {world.a}:\n    everywhere: {{enabled: false}}\n"
    )
    before = world.config.read_bytes()
    assert world.report("everywhere", world.a) == ([], None)
    names, report = world.report("everywhere", world.b)
    assert names == ["report"] and report["cwd"] == str(world.b)
    assert [s["cwd"] for s in world.started()] == [str(world.b)]
    assert world.config.read_bytes() == before


def test_cwd_is_taken_from_the_workspace_root_and_env_files_are_read_in_order(world):
    (world.a / "sub").mkdir()
    (world.a / "tools").mkdir()
    (world.a / ".env").write_text(f"export FROM_FILE={CANARY}\nSHARED=first\nnot a line\nREF=${{BASE_ONLY}}/x\n")
    (world.a / ".env.local").write_text("SHARED=second\n")
    world.model(
        f"providers:\n  srv:\n    {world.server()}\n    env: {{LEVEL: provider, DROPPED: x}}\n"
        f"bindings:\n  {world.a}:\n    srv:\n      cwd: tools\n      env_files: [.env, .env.local, .env.missing]\n"
        f"      env: {{LEVEL: binding, DROPPED: null, PATH: '${{PATH}}:/extra'}}\n"
    )
    _, report = world.report("srv", world.a / "sub")
    env = report["env"]
    assert report["cwd"] == str(world.a / "tools")
    assert (env["FROM_FILE"], env["SHARED"], env["REF"], env["LEVEL"]) == (CANARY, "second", "from-the-client/x", "binding")
    assert "DROPPED" not in env and env["PATH"].endswith(":/extra")
    logged = world.logged()
    assert f"{world.a}/.env:3: not a NAME=value line" in logged and ".env.missing: no such env file" in logged
    assert CANARY not in logged


def test_a_relative_command_is_taken_from_the_workspace_root_not_its_cwd(world):
    """`command: ./bin/notes-mcp` with `cwd: tools` (issue 30): a person reads the path against
    the workspace root, as the README says; the server still runs in tools/."""
    (world.a / "sub").mkdir()
    (world.a / "tools").mkdir()
    script = world.a / "bin" / "notes-mcp"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {SERVER} \"$@\"\n")
    script.chmod(0o755)
    world.model(f"providers:\n  notes:\n    command: ./bin/notes-mcp\nbindings:\n  {world.a}:\n    notes: {{cwd: tools}}\n")
    names, report = world.report("notes", world.a / "sub")
    assert names == ["report"] and report["cwd"] == str(world.a / "tools")
    explained = world.projector("explain", "--verbose", str(world.a / "sub"), "--config", str(world.config)).stdout
    assert "runs: ./bin/notes-mcp  in ~/work/a/tools" in explained and "not an executable" not in explained
    script.unlink()
    missing = world.projector("explain", "--verbose", str(world.a / "sub"), "--config", str(world.config)).stdout
    assert "notice: ./bin/notes-mcp is not an executable here" in missing


# --------------------------------------------------------------------------- direnv

direnv = pytest.mark.skipif(shutil.which("direnv") is None and not os.environ.get("CI"), reason="direnv is not installed (.ci/run installs it)")


def _envrc(world: World, folder: Path, text: str, allow: bool = True) -> None:
    (folder / ".envrc").write_text(text)
    (folder / "bin").mkdir(exist_ok=True)
    if allow:
        subprocess.run(["direnv", "allow", str(folder)], env=world.env, check=True, capture_output=True)


def _allowed(world: World, folder: Path) -> bool:
    status = subprocess.run(["direnv", "status"], cwd=folder, env=world.env, capture_output=True, text=True, check=False).stdout
    return "Found RC allowed true" in status or "Found RC allowed 0" in status


@direnv
def test_direnv_overlays_reach_only_their_workspace_server(world):
    for folder, tag in ((world.a, "a"), (world.b, "b")):
        _envrc(world, folder, f'export VIRTUAL_ENV="$PWD/.venv"\nPATH_add bin\nexport SECRET_{tag.upper()}={CANARY}-{tag}\nunset BASE_ONLY\n')
    world.model(
        f"providers:\n  srv:\n    {world.server()}\n  plain:\n    {world.server()}\n"
        f"bindings:\n  {world.a}:\n    srv: {{direnv: true}}\n  {world.b}:\n    srv: {{direnv: true}}\n"
    )
    for folder, tag, other in ((world.a, "a", world.b), (world.b, "b", world.a)):
        env = world.report("srv", folder)[1]["env"]
        assert env["VIRTUAL_ENV"] == f"{folder}/.venv" and env["PATH"].split(":")[0] == f"{folder}/bin"
        assert env[f"SECRET_{tag.upper()}"] == f"{CANARY}-{tag}" and "BASE_ONLY" not in env  # direnv's unset is an unset
        assert str(other) not in json.dumps(env)
    plain = world.report("plain", world.a)[1]["env"]  # no binding: the client's environment as it is
    assert "VIRTUAL_ENV" not in plain and f"{world.a}/bin" not in plain["PATH"] and plain["BASE_ONLY"] == "from-the-client"

    _envrc(world, world.a, f"PATH_add bin\nexport SECRET_A={CANARY}-a\n")  # VIRTUAL_ENV removed, allowed again
    assert "VIRTUAL_ENV" not in world.report("srv", world.a)[1]["env"]

    commands = (("explain", "--json"), ("explain",), ("status",), ("diff",))
    outputs = [world.projector(*args, "--config", str(world.config), folder=world.a) for args in commands]
    explained = json.loads(outputs[0].stdout)
    names = next(p for p in explained["providers"] if p["name"] == "srv")["env"]
    assert sorted(next(iter(names.values()))) == ["PATH", "SECRET_A"]
    everything = world.logged() + "".join(o.stdout + o.stderr for o in outputs)
    assert CANARY not in everything


@direnv
def test_a_blocked_envrc_is_never_loaded_and_never_allowed(world):
    _envrc(world, world.a, f"export SECRET_A={CANARY}\n", allow=False)
    world.model(f"providers:\n  srv:\n    {world.server()}\nbindings:\n  {world.a}:\n    srv: {{direnv: true}}\n")
    env = world.report("srv", world.a)[1]["env"]
    assert "SECRET_A" not in env and env["BASE_ONLY"] == "from-the-client"
    assert "not allowed" in world.logged() and CANARY not in world.logged()
    assert not _allowed(world, world.a)
    _envrc(world, world.a, "export SECRET_A=trusted\n")  # the user allows it
    assert world.report("srv", world.a)[1]["env"]["SECRET_A"] == "trusted"
    (world.a / ".envrc").write_text(f"export SECRET_A={CANARY}\n")  # changed after allow: blocked again
    assert "SECRET_A" not in world.report("srv", world.a)[1]["env"]
    assert not _allowed(world, world.a)


# --------------------------------------------------------------------------- trusted project files


def test_a_project_file_counts_only_while_trusted(world):
    world.model(f"providers:\n  srv:\n    {world.server()}\n")
    project = world.a / ".projector.yaml"
    project.write_text(
        f"srv:\n  env: {{FROM_PROJECT: 'yes'}}\nprojectonly:\n  env: {{OWN: {CANARY}}}\n"
        f"providers:\n  projectonly:\n    {world.server('--tool', 'own_report')}\n"
    )
    assert "FROM_PROJECT" not in world.report("srv", world.a)[1]["env"]
    assert "is ignored: it is not trusted" in world.logged()

    trusted = world.projector("trust", str(world.a), "--config", str(world.config))
    assert trusted.returncode == 0, trusted.stderr
    assert "local server projectonly: runs" in trusted.stdout and CANARY not in trusted.stdout
    assert world.report("srv", world.a)[1]["env"]["FROM_PROJECT"] == "yes"
    names, report = world.report("projectonly", world.a)
    assert names == ["own_report"] and report["env"]["OWN"] == CANARY
    assert world.report("projectonly", world.b) == ([], None)  # declared by a's file only

    (world.home / ".claude.json").write_text("{}\n")  # Claude Code is installed here
    synced = world.projector("sync", "--config", str(world.config), "--client", "claude-code")
    assert synced.returncode == 0, synced.stderr + synced.stdout
    entries = json.loads((world.home / ".claude.json").read_text())["mcpServers"]
    assert sorted(entries) == ["projectonly", "srv"] and entries["projectonly"]["args"][:3] == ["mcp", "--provider", "projectonly"]

    project.write_text(project.read_text() + "# an edit\n")  # any change withdraws trust
    assert "FROM_PROJECT" not in world.report("srv", world.a)[1]["env"]
    assert world.report("projectonly", world.a) == ([], None)
    assert "changed since it was trusted" in world.logged()

    assert world.projector("trust", str(world.a), "--config", str(world.config)).returncode == 0
    assert world.report("srv", world.a)[1]["env"]["FROM_PROJECT"] == "yes"
    assert world.projector("untrust", str(world.a)).returncode == 0
    assert "FROM_PROJECT" not in world.report("srv", world.a)[1]["env"]
    assert CANARY not in world.logged()


def test_trust_refuses_a_bad_project_file_with_its_place(world):
    world.model(f"providers:\n  srv:\n    {world.server()}\n")
    (world.a / ".projector.yaml").write_text("srv:\n  kbs: [x]\n")
    refused = world.projector("trust", str(world.a), "--config", str(world.config))
    assert refused.returncode == 1
    assert '.projector.yaml:2:3: srv.kbs: "kbs" is not a setting of local provider "srv"' in refused.stderr
    assert "nothing was trusted" in refused.stderr
    assert not (world.root / "state" / "projector" / "trust.json").exists()


# --------------------------------------------------------------------------- identity


def test_a_symlink_to_a_workspace_is_that_workspace(world):
    world.model(f"providers:\n  srv:\n    {world.server()}\n    enabled: false\nbindings:\n  {world.a}:\n    srv: {{enabled: true}}\n")
    link = world.home / "link-to-a"
    link.symlink_to(world.a)
    (world.a / "deep").mkdir()
    names, report = world.report("srv", link / "deep")
    assert names == ["report"] and report["cwd"] == str(world.a)


def test_a_git_worktree_of_a_repository_bound_with_worktrees_true(world):
    repo, tree = world.home / "src" / "repo", world.home / "trees" / "feature"
    git = lambda *args: subprocess.run(["git", *args], cwd=repo, env={**world.env, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}, check=True, capture_output=True)  # noqa: E731
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "f").write_text("x")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "init")
    git("worktree", "add", "-q", str(tree))
    world.model(
        f"providers:\n  srv:\n    {world.server()}\n    enabled: false\n  other:\n    {world.server()}\n    enabled: false\n"
        f"bindings:\n  {repo}:\n    worktrees: true\n    srv: {{enabled: true, env: {{WHERE: repo}}}}\n"
        f"  {repo}/pkg:\n    other: {{enabled: true}}\n"
    )
    names, report = world.report("srv", tree / "pkg")
    assert names == ["report"] and report["cwd"] == str(tree) and report["env"]["WHERE"] == "repo"
    assert world.report("other", tree / "pkg") == ([], None)  # that binding did not ask for worktrees
    assert world.report("other", repo / "pkg")[0] == ["report"]


def test_a_session_started_in_a_removed_folder_is_told_so(world):
    world.model(f"providers:\n  srv:\n    {world.server()}\n")
    gone = world.home / "gone"
    gone.mkdir()
    bridge = f"{sys.executable} -m projector mcp --provider srv --config {world.config}"
    done = subprocess.run(["sh", "-c", f"cd {gone} && rmdir {gone} && exec {bridge}"], env=world.env, input="",
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert "the session's folder no longer exists" in done.stderr and world.started() == []
