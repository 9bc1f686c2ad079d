"""The test servers (the scripts beside this file), and the routed KB server started on loopback."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import paths

ROUTED_KB = paths.SERVERS / "routed_kb.py"
REPORT = paths.SERVERS / "report_server.py"
TOKEN = "test-token"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KbServer:
    def __init__(self, root: Path, mode: str, idle: float | None, kbs: str, options: tuple[str, ...] = ()):
        self.port = free_port()
        self.record = root / f"requests-{self.port}.jsonl"
        self.record.touch()
        command = [sys.executable, str(ROUTED_KB), "--port", str(self.port), "--mode", mode, "--kbs", kbs, "--token", TOKEN, "--record", str(self.record)]
        if idle is not None:
            command += ["--idle", str(idle)]
        self.options = options  # more of routed_kb.py's options (--session-roots, --tls CERT KEY)
        command += options
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError(self.process.stderr.read().decode()) from None
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the KB server did not start")

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
