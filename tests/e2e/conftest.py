"""A person's machine for the end-to-end tier: a HOME with projector on PATH, workspaces, the
routed KB server and a mock model API on loopback, `projector sync` run as the shell hook runs it,
and a real client started as a desktop launcher starts it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import paths
import pytest
from servers import REPORT, TOKEN, KbServer

sys.path.insert(0, str(paths.TOOLS))
import drivers  # noqa: E402
import npm_tools  # noqa: E402
from model_apis import ModelApi  # noqa: E402

CLIENTS = list(drivers.DRIVERS)
KBS = "handbook,api-a,api-b"


def unusable(client: str) -> str | None:
    """Why ``client`` cannot run here (not installed, or this machine cannot set it up); None: it can."""
    binary = drivers.DRIVERS[client].binary
    missing = npm_tools.missing_reason() or (None if npm_tools.binary(binary) else f"{binary} is not among the npm test tools in {npm_tools.cache()}")
    if missing and os.environ.get("CI") == "true":
        pytest.fail(missing)
    return missing or drivers.DRIVERS[client].unusable()


class Desk:
    """One client on one machine. Folders: ``workspace`` (bound: docs [api-a, handbook], the local
    provider ``notes`` turned on with this workspace's env), ``session`` (a folder inside it, where
    the client starts), ``vendor`` (docs: []) and ``scratch`` (under no binding: docs' default)."""

    def __init__(self, sandbox, client: str, kb: KbServer, api: ModelApi):  # sandbox: tests/conftest.py's Sandbox
        self.root, self.client, self.kb, self.api = sandbox.root, client, kb, api
        self.sandbox = sandbox
        self.home = self.sandbox.home
        self.starts = self.root / "bridge-starts.tsv"
        self.spawns = self.root / "notes-spawns.jsonl"
        self.sandbox.install_projector(starts=self.starts)
        self.workspace = self.home / "work" / "app"
        self.session = self.workspace / "src"
        self.vendor = self.home / "work" / "vendor"
        self.scratch = self.home / "scratch"
        for folder in (self.session, self.vendor, self.scratch):
            folder.mkdir(parents=True)
        # the person's shell (where the hook runs sync) and the desktop launcher's environment
        self.shell = {"HOME": str(self.home), "PATH": f"{self.sandbox.bin}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        node = os.path.dirname(shutil.which("node") or "/usr/bin/node")
        self.launcher = {"HOME": str(self.home), "PATH": ":".join(dict.fromkeys([str(self.sandbox.bin), node, "/usr/bin", "/bin"])),
                         "DOCS_TOKEN": TOKEN}
        self.model_path = self.home / ".config" / "projector" / "projector.yaml"
        self.tag = uuid.uuid4().hex[:12]  # in docs' URL: this desk's requests among the KB server's

    def kb_requests(self) -> list[dict]:
        """The KB server's record of this desk's requests."""
        return [r for r in self.kb.requests() if parse_qs(r["query"]).get("desk") == [self.tag]]

    def kb_sets(self) -> set[str | None]:
        """The ``kbs`` parameter of each request that reached the KB server (None: absent, every KB)."""
        return {(parse_qs(r["query"], keep_blank_values=True).get("kbs") or [None])[0] for r in self.kb_requests()}

    def model_text(self) -> str:
        return (
            f"version: 1\nclients: [{self.client}]\nproviders:\n"
            f"  docs:\n    url: {self.kb.url}?desk={self.tag}\n    token_env: DOCS_TOKEN\n    kbs: [{KBS.replace(',', ', ')}]\n    default: [api-b]\n"
            f"  notes:\n    command: {sys.executable}\n    args: [{REPORT}, --tool, notes_report]\n"
            f"    env: {{REPORT_SPAWN_LOG: {self.spawns}}}\n    enabled: false\n"
            f"bindings:\n"
            f"  {self.workspace}:\n    docs: [api-a, handbook]\n    notes: {{enabled: true, env: {{NOTES_MODE: app}}}}\n"
            f"  {self.vendor}:\n    docs: []\n"
        )

    def write_model(self, path: Path | None = None) -> Path:
        path = path or self.model_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.model_text())
        return path

    def move_xdg(self) -> None:
        """XDG_CONFIG_HOME and XDG_STATE_HOME away from their defaults, in the shell and the launcher alike."""
        moved = {"XDG_CONFIG_HOME": str(self.root / "xdg" / "config"), "XDG_STATE_HOME": str(self.root / "xdg" / "state")}
        self.shell.update(moved)
        self.launcher.update(moved)
        self.model_path = Path(moved["XDG_CONFIG_HOME"]) / "projector" / "projector.yaml"

    def projector(self, *args: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([sys.executable, "-m", "projector", *args], env=self.shell, cwd=self.home,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, f"projector {' '.join(args)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        return done

    def drive(self, folder: Path, call: str | None = None) -> drivers.Run:
        return drivers.drive(drivers.DRIVERS[self.client], self.api, folder, dict(self.launcher), call)

    def bridges(self) -> list[tuple[str, str]]:
        """(folder, provider) of each bridge the client started."""
        return bridges_started(self.starts)

    def notes_started(self) -> list[dict]:
        return [json.loads(line) for line in self.spawns.read_text().splitlines()] if self.spawns.exists() else []


def bridges_started(starts: Path) -> list[tuple[str, str]]:
    """(folder, provider) of each bridge started, from the record of Sandbox.install_projector."""
    lines = starts.read_text().splitlines() if starts.exists() else []
    return [(folder, args.split("--provider ")[1].split()[0]) for folder, args in (line.split("\t") for line in lines)
            if args.startswith("mcp ")]


@pytest.fixture(scope="session")
def routed_kb(tmp_path_factory) -> Iterator[KbServer]:
    """One routed KB server per worker: each desk's provider URL carries a tag of its own."""
    server = KbServer(tmp_path_factory.mktemp("routed-kb"), "stateful", None, KBS)
    yield server
    server.stop()


@pytest.fixture
def desk(client: str, sandbox, routed_kb: KbServer) -> Iterator[Desk]:
    reason = unusable(client)
    if reason:
        pytest.skip(reason)
    api = ModelApi().start()
    try:
        yield Desk(sandbox, client, routed_kb, api)
    finally:
        api.stop()
