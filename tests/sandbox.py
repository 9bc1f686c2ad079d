"""A temporary HOME with XDG folders for a test, and a way to run projector in it. A module of its
own, not conftest's: a test that builds on it (tests/commands/test_teams.py) imports it by a
name no other folder's conftest.py shadows."""

from __future__ import annotations

import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path


class Sandbox:
    """A temporary HOME with XDG folders, a PATH of our choosing, and a way to run projector."""

    def __init__(self, root: Path):
        self.root = root
        self.home = root / "home"
        self.bin = root / "bin"
        self.home.mkdir()
        self.bin.mkdir()
        self.env: dict[str, str] = {
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "PATH": f"{self.bin}:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent/projector-tests-have-no-session-bus",  # never the person's keyring
        }

    def install_projector(self, starts: Path | None = None) -> str:
        """A `projector` on this sandbox's PATH (its path is what bridge entries name);
        ``starts``: a file that gets one line per start, its folder and arguments."""
        launcher = self.bin / "projector"
        record = f"printf '%s\\t%s\\n' \"$(pwd -P)\" \"$*\" >> '{starts}'\n" if starts else ""
        launcher.write_text(f"#!/bin/sh\n{record}exec {sys.executable} -m projector \"$@\"\n")
        launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
        return str(launcher)

    def start_late(self, seconds: float) -> None:
        """Every start of the installed `projector` waits ``seconds`` first: a loaded machine,
        where a client's MCP server answers after the client is ready to send its prompt."""
        launcher = self.bin / "projector"
        launcher.write_text(launcher.read_text().replace("exec ", f"sleep {seconds}\nexec ", 1))

    def model(self, text: str, name: str = "projector.yaml") -> Path:
        path = self.root / name
        path.write_text(text)
        return path

    def file(self, relative: str, text: str | None = None) -> Path:
        path = self.home / relative
        if text is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return path

    def run(self, *args: str, config: Path | None = None) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "projector", *args]
        if config is not None:
            command += ["--config", str(config)]
        return subprocess.run(command, env=self.env, capture_output=True, text=True, cwd=self.root, timeout=60)

    def text(self) -> Callable[[str], str]:
        return lambda relative: (self.home / relative).read_text()
