"""The OAuth token store: a private file under the state folder, the long-lived secrets in a real
Secret Service (gnome-keyring in its own D-Bus session) when one runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time

import pytest

from projector.core import tokenstore
from projector.core.tokenstore import Keyring, Secrets, Tokens, Unsafe

ACCESS, REFRESH = "canary-access-7f3a", "canary-refresh-91bc"
SIGNED_IN = Tokens(access_token=ACCESS, expires_at=2_000_000_000.0, token_endpoint="https://as.example/token",
                   client_id="projector-1", resource="https://mcp.example/mcp", scope="read",
                   secrets=Secrets(refresh_token=REFRESH, client_secret="dcr-secret"))


def test_without_a_keyring_everything_is_one_private_file(tmp_path):
    kept = tokenstore.write(str(tmp_path), "linear", SIGNED_IN, keyring=None)
    path = tmp_path / "oauth" / "linear.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    read = tokenstore.read(str(tmp_path), "linear")
    assert read == kept and not read.in_keyring
    assert tokenstore.secrets_of(str(tmp_path), "linear", read, None) == Secrets(refresh_token=REFRESH, client_secret="dcr-secret")
    assert ACCESS not in repr(read) and REFRESH not in repr(read.secrets)
    assert tokenstore.remove(str(tmp_path), "linear") and tokenstore.read(str(tmp_path), "linear") is None


def test_a_file_written_under_a_lax_umask_is_still_private(tmp_path):
    old = os.umask(0)
    try:
        tokenstore.write(str(tmp_path), "linear", SIGNED_IN)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "oauth" / "linear.json").stat().st_mode) == 0o600


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660])
def test_a_file_others_can_read_is_refused_with_what_to_do(tmp_path, mode):
    tokenstore.write(str(tmp_path), "linear", SIGNED_IN)
    path = tmp_path / "oauth" / "linear.json"
    path.chmod(mode)
    with pytest.raises(Unsafe) as refused:
        tokenstore.read(str(tmp_path), "linear")
    message = str(refused.value)
    assert f"mode {mode:04o} lets others read it" in message and "projector logout linear; projector login linear" in message
    assert ACCESS not in message and REFRESH not in message


@pytest.mark.skipif(os.getuid() != 0, reason="giving a file to another user needs root")
def test_a_file_another_user_owns_is_refused(tmp_path):
    """As root: the file is chowned to nobody, as a file another user planted would be."""
    import pwd

    tokenstore.write(str(tmp_path), "linear", SIGNED_IN)
    path = tmp_path / "oauth" / "linear.json"
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(path, nobody, -1)
    with pytest.raises(Unsafe) as refused:
        tokenstore.read(str(tmp_path), "linear")
    assert f"owned by user {nobody}, not by you (0)" in str(refused.value) and f"rm {path}" in str(refused.value)


def test_a_symlinked_token_file_is_refused(tmp_path):
    tokenstore.write(str(tmp_path), "elsewhere", SIGNED_IN)
    (tmp_path / "oauth" / "linear.json").symlink_to(tmp_path / "oauth" / "elsewhere.json")
    with pytest.raises(Unsafe, match="cannot be read safely"):
        tokenstore.read(str(tmp_path), "linear")


def test_no_session_bus_means_no_keyring():
    assert Keyring.found({"PATH": os.environ.get("PATH", "")}) is None


@pytest.fixture
def secret_service(tmp_path):
    """A real Secret Service: gnome-keyring-daemon, unlocked, on a D-Bus session of its own
    (HOME is the test's: the keyring file is made there). Both end with the bus."""
    if not (shutil.which("dbus-daemon") and shutil.which("gnome-keyring-daemon") and shutil.which("secret-tool")):
        pytest.skip("no dbus-daemon, gnome-keyring-daemon or secret-tool (.ci/run installs them)")
    home = tmp_path / "keyring-home"
    home.mkdir()
    runtime = home / "run"  # gnome-keyring's control socket: its own, or a second daemon would join the first
    runtime.mkdir(mode=0o700)
    environ = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "DBUS_SESSION_BUS_ADDRESS": f"unix:path={home}/bus"}
    started = subprocess.run(["dbus-daemon", "--session", "--fork", "--print-pid=1", f"--address=unix:path={home}/bus"],
                             capture_output=True, text=True, check=True, env=environ)
    bus = int(started.stdout.split()[0])
    try:
        subprocess.run(["gnome-keyring-daemon", "--unlock", "--components=secrets"], input="test-password", env=environ,
                       capture_output=True, text=True, check=True, timeout=20)
        for _ in range(100):  # the daemon answers before its Secret Service is on the bus: wait until a store works
            if subprocess.run(["secret-tool", "store", "--label", "probe", "probe", "1"], input="x", env=environ, capture_output=True,
                              text=True, timeout=10).returncode == 0:
                break
            time.sleep(0.1)
        yield environ
    finally:
        os.kill(bus, signal.SIGTERM)


def test_with_a_secret_service_the_refresh_token_is_in_the_keyring_only(tmp_path, secret_service):
    keyring = Keyring.found(secret_service)
    assert keyring is not None
    state = str(tmp_path / "state")
    kept = tokenstore.write(state, "linear", SIGNED_IN, keyring)
    assert kept.in_keyring
    text = (tmp_path / "state" / "oauth" / "linear.json").read_text()
    assert ACCESS in text and REFRESH not in text and "dcr-secret" not in text
    read = tokenstore.read(state, "linear")
    assert read.in_keyring and read.secrets == Secrets()
    assert tokenstore.secrets_of(state, "linear", read, keyring) == Secrets(refresh_token=REFRESH, client_secret="dcr-secret")
    assert tokenstore.remove(state, "linear", keyring)
    assert keyring.lookup(state, "linear") is None


def test_two_state_folders_keep_apart_in_one_keyring(tmp_path, secret_service):
    keyring = Keyring.found(secret_service)
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    tokenstore.write(one, "linear", SIGNED_IN, keyring)
    tokenstore.write(two, "linear", Tokens(access_token="b", expires_at=None, secrets=Secrets(refresh_token="other")), keyring)
    assert tokenstore.secrets_of(one, "linear", tokenstore.read(one, "linear"), keyring).refresh_token == REFRESH


def test_usable_until_a_margin_before_expiry():
    assert SIGNED_IN.usable(now=2_000_000_000.0 - 301) and not SIGNED_IN.usable(now=2_000_000_000.0 - 299)
    assert Tokens(access_token="x", expires_at=None).usable(now=1e12)


def test_each_platform_has_its_keyring():
    assert tokenstore.backend("darwin") is tokenstore.Keychain
    assert tokenstore.backend("linux") is tokenstore.SecretService and tokenstore.backend("freebsd14") is tokenstore.SecretService


@pytest.fixture
def keychain(tmp_path):
    """macOS's `security` played by tests/core/security_standin.py (no Mac here: the real
    Keychain is untested), on PATH as `security`; it logs each run's argv, stdin and environment."""
    import json
    import sys
    from pathlib import Path

    bin_ = tmp_path / "bin"
    bin_.mkdir()
    standin = Path(__file__).with_name("security_standin.py")
    (bin_ / "security").write_text(f"#!/bin/sh\nexec {sys.executable} {standin} \"$@\"\n")
    (bin_ / "security").chmod(0o755)
    log = tmp_path / "security.log"
    environ = {"PATH": f"{bin_}:/usr/bin:/bin", "SECURITY_LOG": str(log), "SECURITY_ITEMS": str(tmp_path / "items.json")}
    keyring = Keyring.found(environ, platform="darwin")
    assert isinstance(keyring, tokenstore.Keychain)
    keyring.runs = lambda: [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return keyring


def test_on_macos_the_refresh_token_is_in_the_keychain_and_never_on_a_command_line(tmp_path, keychain):
    awkward = Tokens(access_token=ACCESS, expires_at=None, client_id="c",
                     secrets=Secrets(refresh_token='canary "refresh" \\ with spaces', client_secret="dcr 'secret'"))
    state = str(tmp_path / "state with space")
    kept = tokenstore.write(state, "linear", awkward, keychain)
    assert kept.in_keyring
    text = (tmp_path / "state with space" / "oauth" / "linear.json").read_text()
    assert "canary" not in text.replace(ACCESS, "") and "dcr" not in text
    read = tokenstore.read(state, "linear")
    assert tokenstore.secrets_of(state, "linear", read, keychain) == awkward.secrets  # quoted and read back whole
    assert tokenstore.remove(state, "linear", keychain) and keychain.lookup(state, "linear") is None
    account = f"linear@{os.path.abspath(state)}"
    runs = keychain.runs()
    assert [run["argv"] for run in runs] == [
        ["-i"],
        ["find-generic-password", "-s", "projector", "-a", account, "-w"],
        ["delete-generic-password", "-s", "projector", "-a", account],
        ["find-generic-password", "-s", "projector", "-a", account, "-w"],
    ]
    assert runs[0]["stdin"].startswith(f'"add-generic-password" "-U" "-s" "projector" "-a" "{account}" "-l" "projector: linear (OAuth)" "-w" ')
    for run in runs:  # ps shows argv and (to the same user) the environment: neither holds a secret
        assert "canary" not in json.dumps(run["argv"]) + json.dumps(run["environ"]) and "dcr" not in json.dumps(run["argv"])


def test_a_secret_too_long_for_one_security_line_stays_in_the_token_file(tmp_path, keychain):
    """`security -i` reads 4096 bytes a line: a longer one would run as two commands."""
    long = Tokens(access_token=ACCESS, expires_at=None, secrets=Secrets(refresh_token="r" * 4100))
    kept = tokenstore.write(str(tmp_path), "linear", long, keychain)
    assert not kept.in_keyring and tokenstore.read(str(tmp_path), "linear").secrets.refresh_token == "r" * 4100
    assert [run["argv"] for run in keychain.runs()] == [["delete-generic-password", "-s", "projector", "-a",
                                                         f"linear@{tmp_path}"]]  # no stale item left behind


def test_a_short_lived_token_is_renewed_at_half_its_life_not_five_minutes_early(tmp_path):
    """A two-minute token renewed five minutes early would be renewed at every session's start."""
    tokenstore.write(str(tmp_path), "linear", Tokens(access_token="x", expires_at=1_000_120.0, lifetime=120.0))
    short = tokenstore.read(str(tmp_path), "linear")
    assert short.usable(now=1_000_059.0) and not short.usable(now=1_000_061.0)


def test_a_stamp_tells_a_rewritten_token_file_and_held_tells_a_sign_in_under_way(tmp_path):
    state = str(tmp_path)
    assert tokenstore.stamp(state, "linear") == "none" and not tokenstore.held(state, "linear")
    tokenstore.write(state, "linear", SIGNED_IN, keyring=None)
    first = tokenstore.stamp(state, "linear")
    tokenstore.write(state, "linear", SIGNED_IN, keyring=None)  # the same tokens, written again: another file
    assert first != tokenstore.stamp(state, "linear") and ACCESS not in first
    with tokenstore.locked(state, "linear", timeout=1):
        assert tokenstore.held(state, "linear")
    assert not tokenstore.held(state, "linear")


@pytest.mark.parametrize("entry", ["", ".", "bin"])
def test_a_keyring_tool_in_the_workspace_is_never_run_through_a_relative_path_entry(tmp_path, monkeypatch, entry):
    """A PATH with an empty or relative entry (``PATH=$PATH:`` is a common slip) would find a
    ``secret-tool`` in the bridge's cwd, a workspace someone else wrote, and hand it the refresh
    token on its stdin: only absolute entries are searched, as Go's exec.LookPath does."""
    workspace = tmp_path / "cloned-repo"
    for folder in (workspace, workspace / "bin"):
        folder.mkdir(exist_ok=True)
        (folder / "secret-tool").write_text("#!/bin/sh\ncat > stolen\n")
        (folder / "secret-tool").chmod(0o755)
    monkeypatch.chdir(workspace)
    environ = {"PATH": f"{entry}:/nonexistent", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/nonexistent"}
    assert Keyring.found(environ, platform="linux") is None


def test_a_token_folder_others_may_write_in_is_refused_before_any_secret_goes_there(tmp_path):
    """Anyone who may write in ``<state>/oauth`` can plant a symlink where a bridge appends its
    sign-in's log, or hold the sign-in lock forever: nothing is written there, and the message
    says what to do."""
    folder = tmp_path / "oauth"
    folder.mkdir()
    folder.chmod(0o777)
    with pytest.raises(Unsafe) as refused:
        tokenstore.write(str(tmp_path), "linear", SIGNED_IN, keyring=None)
    assert str(refused.value) == (f"{folder}: mode 0777 lets others write in it: check what is in it, then make it private "
                                  f"(chmod 700 {folder}) and sign in again")
    with pytest.raises(Unsafe):
        tokenstore.locked(str(tmp_path), "linear", timeout=1)
    assert list(folder.iterdir()) == []
    folder.chmod(0o755)  # others may only look: made private, and used
    tokenstore.write(str(tmp_path), "linear", SIGNED_IN, keyring=None)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


@pytest.mark.skipif(os.getuid() != 0, reason="giving a folder to another user takes root")
def test_a_token_folder_of_another_user_is_refused(tmp_path):
    """As root, the folder is given to nobody (65534): the check is by owner, not by mode."""
    folder = tmp_path / "oauth"
    folder.mkdir(mode=0o700)
    os.chown(folder, 65534, 65534)
    with pytest.raises(Unsafe, match=r"owned by user 65534, not by you \(0\)"):
        tokenstore.write(str(tmp_path), "linear", SIGNED_IN, keyring=None)


@pytest.mark.parametrize(("resource", "url"), [
    ("https://mcp.example/mcp", "https://mcp.example/mcp"),
    ("https://mcp.example/", "https://mcp.example/mcp"),  # the Protected Resource Metadata names a parent
    ("https://MCP.example/mcp/", "https://mcp.example/mcp?x=1"),
    ("https://mcp.example/mcp", "https://mcp.example/mcp2"),  # a sibling is not below it
    ("https://mcp.example/mcp", "https://mcp.example/v2/mcp"),  # the model moved the provider
    ("https://mcp.example/mcp", "http://mcp.example/mcp"),
    ("https://mcp.example/mcp", "https://mcp.example:8443/mcp"),
    ("https://mcp.example/mcp/sub", "https://mcp.example/mcp"),  # a child's sign-in does not serve its parent
])
def test_a_sign_in_serves_the_addresses_the_sdk_allows_its_resource_for(resource, url):
    from mcp.shared.auth_utils import check_resource_allowed

    assert Tokens(access_token="x", expires_at=None, resource=resource).serves(url) == check_resource_allowed(url, resource)
    assert Tokens(access_token="x", expires_at=None).serves(url)  # a sign-in that names no resource is taken as it is


@pytest.mark.skipif(not shutil.which("secret-tool"), reason="no secret-tool (.ci/run installs it)")
def test_a_session_bus_address_naming_a_socket_that_is_not_there_means_no_keyring(tmp_path):
    """`unix:path=X` where X does not exist: no Secret Service can answer there, so none is used
    (secret-tool would fail at each store and read); other address forms are left to secret-tool."""
    def found(address: str) -> Keyring | None:
        return Keyring.found({"PATH": os.environ["PATH"], "DBUS_SESSION_BUS_ADDRESS": address}, "linux")

    assert found("unix:path=/nonexistent/projector-test/bus") is None
    assert found(f"unix:path={tmp_path}/bus,guid=0123456789abcdef") is None
    (tmp_path / "bus").touch()
    assert found(f"unix:path={tmp_path}/bus,guid=0123456789abcdef") is not None
    assert found(f"unix:path={str(tmp_path).replace('/', '%2f')}%2fbus") is not None  # D-Bus escapes bytes as %XX
    assert found("unix:abstract=/tmp/dbus-projector-test") is not None  # not a path: secret-tool finds out
    assert found("unix:path=/nonexistent/bus;unix:abstract=/tmp/dbus-projector-test") is not None  # a list: the next may answer


def test_a_temporary_file_a_killed_writer_left_does_not_stop_the_next_write(tmp_path):
    """A login or refresh killed mid-write leaves its temporary file; a later process with the
    same pid (pids repeat, in a container soon) must still write the tokens, not fail on it."""
    tokenstore.write(str(tmp_path), "linear", SIGNED_IN, keyring=None)
    (tmp_path / "oauth" / f"linear.json.{os.getpid()}.tmp").write_text("left behind")
    renewed = Tokens(access_token="canary-renewed", expires_at=None)
    tokenstore.write(str(tmp_path), "linear", renewed, keyring=None)
    assert tokenstore.read(str(tmp_path), "linear").access_token == "canary-renewed"


@pytest.mark.parametrize(("access", "refresh", "which"), [("canary\r\nX-Forged: 1", REFRESH, "an access token"),
                                                         (ACCESS, "canary\n", "a refresh token"),
                                                         ("", REFRESH, "an access token")])
def test_a_token_no_request_can_carry_is_never_written(tmp_path, access, refresh, which):
    tokens = Tokens(access_token=access, expires_at=None, secrets=Secrets(refresh_token=refresh))
    with pytest.raises(tokenstore.Unfit) as refused:
        tokenstore.write(str(tmp_path), "linear", tokens)
    assert str(refused.value).startswith(f"the authorization server of linear answered with {which} holding")
    assert "canary" not in str(refused.value) and "projector login linear" in str(refused.value)
    assert tokenstore.read(str(tmp_path), "linear") is None


def test_a_keyring_item_that_is_no_json_object_gives_no_secrets(tmp_path):
    class Holding(Keyring):
        def lookup(self, state: str, provider: str) -> str | None:
            return '["canary-refresh-91bc"]'  # JSON, but not the object projector stores

    in_keyring = Tokens(access_token=ACCESS, expires_at=None, in_keyring=True)
    assert tokenstore.secrets_of(str(tmp_path), "linear", in_keyring, Holding({}, "true")) == Secrets()
