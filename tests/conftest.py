"""Shared fixtures. No test touches the real HOME: every one gets a temporary HOME and XDG
folders, and the environment it passes to projector holds nothing else from this machine."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from paths import CORPUS, REFERENCE, TESTS, TOOLS
from sandbox import Sandbox
from hypothesis import settings
from syrupy.extensions.amber import AmberSnapshotExtension

# CI runs each submission once on a clean clone: there the property tests draw the same examples
# every run (a failure is a bug to fix, never a flake), and a person's run goes on exploring.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def _relocating() -> set[str]:
    """The variables that move a client's files, from the descriptors (read without any cache)."""
    from projector.compile.clients import client, validated
    from projector.core.resources import data_dir

    return {name for path in data_dir("clients").glob("*.yaml") for name in client(validated(path)).variables()}


RELOCATING = _relocating()
NO_BUS = "unix:path=/nonexistent/projector-tests-have-no-session-bus"
THROWAWAY_VARIABLES = {"XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "PROJECTOR_CONFIG", "PROJECTOR_STATE"} | RELOCATING
# A machine's proxy (a CI runner's, say) would carry the tests' loopback requests (urllib's in this
# process, httpx's in projector's) to it: every test talks to 127.0.0.1 only, and the proxy tests
# set their own.
PROXY_VARIABLES = {f"{scheme}_proxy" for scheme in ("http", "https", "all", "no", "ftp")}
PROXY_VARIABLES |= {name.upper() for name in PROXY_VARIABLES}


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
    # Nor the person's keyring: a bus address that leads nowhere, unless a test starts a Secret
    # Service of its own (without one, projector would find the session bus at /run/user/UID/bus).
    os.environ["DBUS_SESSION_BUS_ADDRESS"] = NO_BUS
    for name in THROWAWAY_VARIABLES | PROXY_VARIABLES:
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


@pytest.fixture
def sandbox(tmp_path) -> Sandbox:
    return Sandbox(tmp_path)


@pytest.fixture
def authorization_server():
    """Start scripted loopback authorization servers (tests/servers/scripted.py; keyword
    arguments: AuthorizationServer's); each is closed after the test."""
    from servers.scripted import AuthorizationServer

    started: list[AuthorizationServer] = []

    def start(**options) -> AuthorizationServer:
        started.append(AuthorizationServer(**options))
        return started[-1]

    yield start
    for server in started:
        server.close()


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

