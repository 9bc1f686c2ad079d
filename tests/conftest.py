"""Shared fixtures. No test touches the real HOME: every one gets a temporary HOME and XDG
folders, and the environment it passes to projector holds nothing else from this machine."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from paths import CORPUS, REFERENCE, TESTS, TOOLS
from syrupy.extensions.amber import AmberSnapshotExtension



def _relocating() -> set[str]:
    """The variables that move a client's files, from the descriptors (read without any cache)."""
    from projector.compile.clients import client, validated
    from projector.core.resources import data_dir

    return {name for path in data_dir("clients").glob("*.yaml") for name in client(validated(path)).variables()}


RELOCATING = _relocating()
THROWAWAY_VARIABLES = {"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PROJECTOR_CONFIG", "PROJECTOR_STATE"} | RELOCATING


def pytest_configure(config) -> None:
    """The whole session, collection included, runs with a throw-away HOME: module-level code
    (a parametrisation that loads the client descriptors, say) runs before any fixture. The npm
    test tools stay where they are (their cache is found before HOME moves). xdist's workers
    inherit the controller's environment."""
    if os.environ.get("PROJECTOR_TEST_HOME"):
        return
    sys.path.insert(0, str(TOOLS))
    import npm_tools

    os.environ.setdefault("PROJECTOR_TEST_TOOLS", str(npm_tools.cache()))
    home = tempfile.mkdtemp(prefix="projector-test-home-")
    config.add_cleanup(lambda: shutil.rmtree(home, ignore_errors=True))
    os.environ["PROJECTOR_TEST_HOME"] = os.environ["HOME"] = home
    for name in THROWAWAY_VARIABLES:
        os.environ.pop(name, None)


class _SnapshotsFolder(AmberSnapshotExtension):
    """Snapshots live in tests/snapshots/, mirroring the tests' own folders."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[override]
        relative = Path(test_location.filepath).parent.relative_to(TESTS)
        return str(TESTS / "snapshots" / relative)


@pytest.fixture
def snapshot(snapshot):
    return snapshot.use_extension(_SnapshotsFolder)


@pytest.fixture(autouse=True)
def _no_real_home(tmp_path_factory, monkeypatch):
    """Belt and braces: even code that reads os.environ sees a throw-away HOME."""
    home = tmp_path_factory.mktemp("outer-home")
    monkeypatch.setenv("HOME", str(home))
    for name in THROWAWAY_VARIABLES:
        monkeypatch.delenv(name, raising=False)


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
        }

    def install_projector(self, starts: Path | None = None) -> str:
        """A `projector` on this sandbox's PATH (its path is what bridge entries name);
        ``starts``: a file that gets one line per start, its folder and arguments."""
        launcher = self.bin / "projector"
        record = f"printf '%s\\t%s\\n' \"$(pwd -P)\" \"$*\" >> '{starts}'\n" if starts else ""
        launcher.write_text(f"#!/bin/sh\n{record}exec {sys.executable} -m projector \"$@\"\n")
        launcher.chmod(launcher.stat().st_mode | stat.S_IEXEC)
        return str(launcher)

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


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    return Sandbox(tmp_path)


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.skip("../shared/corpus is absent (a user's clone): corpus tests need it beside the project")
    return CORPUS


@pytest.fixture
def reference() -> Path:
    if not REFERENCE.is_dir():
        pytest.skip("../shared/reference is absent (a user's clone)")
    return REFERENCE

