"""A sandbox for shared workspace servers: workspaces a and b, a model whose provider ``srv``
is shared, a state folder where the hosts listen (its path is longer than a socket address
holds), an ``XDG_RUNTIME_DIR`` of its own (that hosts must not depend on), and sessions written
by hand.

The server is ``tests/servers/report_server.py --extras`` (official SDK): ``REPORT_SPAWN_LOG``
counts its starts, ``REPORT_EVENTS`` records cancellations and subscriptions as it saw them.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paths
import pytest
from mcp import Client, StdioServerParameters

SERVER = paths.SERVERS / "report_server.py"
CANARY = "canary-5e1b-value"  # a value that must never appear in projector's files or output
LINGER = 1.0


class Shared:
    """A sandbox HOME with workspaces a and b, a model whose provider ``srv`` is shared, the hosts'
    folder (``hosts``) in its state folder, and a runtime folder of its own."""

    def __init__(self, root: Path, runtime: Path):
        self.root, self.runtime = root, runtime
        self.home = root / "home"
        self.a, self.b = self.home / "work" / "a", self.home / "work" / "b"
        for folder in (self.a, self.b):
            folder.mkdir(parents=True)
        self.config = root / "projector.yaml"
        self.hosts = root / "state" / "projector" / "hosts"
        self.spawns, self.events, self.log = root / "spawns.jsonl", root / "events.jsonl", root / "bridge.log"
        self.env = {
            "HOME": str(self.home),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "XDG_STATE_HOME": str(root / "state"),
            "XDG_CONFIG_HOME": str(root / "config"),
            "XDG_RUNTIME_DIR": str(runtime),
            "REPORT_SPAWN_LOG": str(self.spawns),
            "REPORT_EVENTS": str(self.events),
        }
        self.model(f"  srv:\n    {self.server()}\n    shared: true\n    linger: {LINGER}\n")

    def server(self) -> str:
        return f"command: {sys.executable}\n    args: [{SERVER}, --extras]"

    def model(self, providers: str, bindings: str = "") -> None:
        self.config.write_text(f"version: 1\nproviders:\n{providers}" + (f"bindings:\n{bindings}" if bindings else ""))

    def bridge(self, provider: str = "srv") -> list[str]:
        return [sys.executable, "-m", "projector", "mcp", "--provider", provider, "--config", str(self.config), "--log-file", str(self.log)]

    def client(self, folder: Path, provider: str = "srv", env: dict[str, str] | None = None, **callbacks) -> Client:
        command, *args = self.bridge(provider)
        return Client(StdioServerParameters(command=command, args=args, env=env or self.env, cwd=str(folder)), **callbacks)

    def started(self) -> list[dict]:
        return [json.loads(line) for line in self.spawns.read_text().splitlines()] if self.spawns.exists() else []

    def seen(self) -> list[dict]:
        return [json.loads(line) for line in self.events.read_text().splitlines()] if self.events.exists() else []

    def sockets(self) -> list[Path]:
        return sorted(self.hosts.glob("*.sock")) if self.hosts.exists() else []

    def host_logs(self) -> str:
        return "".join(p.read_text() for p in self.hosts.glob("*.log*"))

    def projector(self, *args: str, folder: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "projector", *args], cwd=folder or self.home, env=env or self.env,
                              capture_output=True, text=True, timeout=60, check=False)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie nobody has reaped yet has ended)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between the open and the read (ESRCH)
        return False


def eventually(check, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


class RawSession:
    """A session written by hand through the bridge: initialized, then held open until closed."""

    def __init__(self, world: Shared, folder: Path, provider: str = "srv", version: str = "2025-11-25", capabilities: dict | None = None):
        self.process = subprocess.Popen(world.bridge(provider), cwd=folder, env=world.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                   "params": {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": {"name": "raw", "version": "1"}}})
        self.answer = self.receive()
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def receive(self) -> dict:
        assert self.process.stdout is not None
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=15)

    def __enter__(self) -> RawSession:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


@pytest.fixture
def shared(tmp_path):
    runtime = Path(tempfile.mkdtemp(prefix="pj-", dir="/tmp"))
    world = Shared(tmp_path, runtime)
    yield world
    for sock in world.sockets():  # stop every host this test left
        subprocess.run([sys.executable, "-c", f"from projector.runtime.host import attach; attach.stop({str(sock)!r})"],
                       env=world.env, timeout=30, check=False)
    for started in world.started():
        if alive(started["pid"]):
            os.kill(started["pid"], signal.SIGKILL)
    shutil.rmtree(runtime, ignore_errors=True)


