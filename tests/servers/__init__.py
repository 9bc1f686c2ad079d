"""The test servers (the scripts beside this file), and the routed KB server started on loopback."""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import paths

ROUTED_KB = paths.SERVERS / "routed_kb.py"
REPORT = paths.SERVERS / "report_server.py"
OAUTH_KB = paths.SERVERS / "oauth_kb.py"
TOKEN = "test-token"


def reserved_port() -> socket.socket:
    """A socket bound to a free loopback port, not listening: the port stays this test's while
    the socket (or a child's copy of it) is open, so no other process (another xdist worker's
    server, an outgoing connection) can take it, and a connection to it is refused until a server
    listens on it. Picking a free port, closing it and handing its number to a child that binds
    it later left a window where another process could take it: the child then failed to start,
    or the test talked to another worker's server."""
    reserved = socket.socket()
    reserved.bind(("127.0.0.1", 0))
    return reserved


@contextlib.contextmanager
def refused_port() -> Iterator[int]:
    """A loopback port where nothing listens, and nothing will while the block runs."""
    with reserved_port() as reserved:
        yield reserved.getsockname()[1]


def started(command: list[str], listener: socket.socket, what: str = "the test server", timeout: float = 60.0) -> subprocess.Popen:
    """A test server's process, once it accepts connections on ``listener`` (reserved_port's),
    which it inherits as ``--fd N`` and listens on. ``timeout``: a server's start (the MCP SDK's
    imports) takes 1-2 s here, many times that on a loaded 2-core machine."""
    command = [*command, "--fd", str(listener.fileno())]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, pass_fds=(listener.fileno(),))
    port = listener.getsockname()[1]
    listener.close()  # the child's copy holds the port
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return process
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"{what} did not start: {process.stderr.read().decode()[-2000:]}") from None
            time.sleep(0.05)
    process.kill()
    process.wait()
    raise RuntimeError(f"{what} did not start within {timeout:.0f} s")


class KbServer:
    def __init__(self, root: Path, mode: str, idle: float | None, kbs: str, options: tuple[str, ...] = ()):
        listener = reserved_port()
        self.port = listener.getsockname()[1]
        self.record = root / f"requests-{self.port}.jsonl"
        self.record.touch()
        command = [sys.executable, str(ROUTED_KB), "--port", str(self.port), "--mode", mode, "--kbs", kbs, "--token", TOKEN, "--record", str(self.record)]
        if idle is not None:
            command += ["--idle", str(idle)]
        self.options = options  # more of routed_kb.py's options (--session-roots, --tls CERT KEY)
        command += options
        self.process = started(command, listener, "the KB server")

    @property
    def url(self) -> str:
        scheme = "https" if "--tls" in self.options else "http"
        return f"{scheme}://127.0.0.1:{self.port}/mcp"

    def requests(self) -> list[dict]:
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=3)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class OAuthKbServer(KbServer):
    """oauth_kb.py: the routed KB server behind the MCP SDK's OAuth, on loopback. Every token it
    issues starts with ``canary``."""

    def __init__(self, root: Path, canary: str, kbs: str):
        listener = reserved_port()
        self.port = listener.getsockname()[1]
        self.record = root / f"oauth-requests-{self.port}.jsonl"
        self.record.touch()
        self.options = ()
        self.canary = canary
        self.process = started([sys.executable, str(OAUTH_KB), "--port", str(self.port), "--kbs", kbs, "--canary", canary,
                                "--record", str(self.record)], listener, "the OAuth KB server")

    def revoke(self, token: str, client_id: str) -> None:
        """Revoke a token at the server's revocation endpoint (RFC 7009), as a person who signs
        the client out in the provider's settings: its access and refresh tokens stop working."""
        import urllib.parse
        import urllib.request

        form = urllib.parse.urlencode({"token": token, "client_id": client_id, "client_secret": ""}).encode()
        with urllib.request.urlopen(urllib.request.Request(self.url.removesuffix("/mcp") + "/revoke", data=form), timeout=10) as answer:
            assert answer.status == 200
