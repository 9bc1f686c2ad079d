"""The tool filter's costs (issue 29's targets), through the real bridge against a stdlib upstream.

    .venv/bin/python bench/filter_bench.py [--tools 500] [--runs 40] [--calls 200] [--base DIR] [--no-callgrind]

- tools/list of ``--tools`` tools (each with a small input schema), asked ``--runs`` times in a
  folder without a rule and in one whose rule (globs, allow and deny) hides about half: the
  median time of one list, and the difference (target: ≤ 1 ms more).
- An allowed tools/call: instructions per call (callgrind's Ir over a session of ``--calls``
  calls, less a session of none, divided by ``--calls``), without a rule and with one; and, with
  ``--base DIR`` (a tree of the code before the filter, e.g. ``git archive <commit> | tar -x -C
  DIR``), the same sessions by that code (target: unchanged without a rule; a base with the
  filter compares the ruled session too).
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
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
RULE = "{allow: ['tool_1*', 'tool_2*', search], deny: ['tool_*9']}"  # offers 201 of 501


def upstream(tools: int) -> tuple[ThreadingHTTPServer, str]:
    """A fast Streamable HTTP upstream: ``tools`` tools, JSON answers."""
    listed = [{"name": f"tool_{n}", "description": f"Tool number {n}: does one thing well.",
               "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
              for n in range(tools)] + [{"name": "search", "description": "Search.", "inputSchema": {"type": "object"}}]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_: object) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            method, id_ = message.get("method"), message.get("id")
            if id_ is None:
                return self._send(202, b"")
            if method == "initialize":
                result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "up", "version": "1"}}
                return self._send(200, json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}).encode(), {"Mcp-Session-Id": "s1"})
            if method == "tools/list":
                return self._send(200, json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"tools": listed}}).encode())
            return self._send(200, json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": "ok"}]}}).encode())

        def do_DELETE(self) -> None:
            self._send(200, b"")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/mcp"


def layout(root: Path, url: str) -> tuple[Path, dict[str, str]]:
    for folder in ("plain", "ruled"):
        (root / folder).mkdir()
    config = root / "projector.yaml"
    config.write_text(f"version: 1\nproviders:\n  up:\n    url: {url}\nbindings:\n  {root}/plain:\n    up: {{}}\n"
                      f"  {root}/ruled:\n    up: {{tools: {RULE}}}\n")
    env = {"HOME": str(root), "PATH": os.environ["PATH"], "LANG": "C.UTF-8", "PYTHONHASHSEED": "0"}
    return config, env


def bridge(config: Path, python_path: str | None = None) -> tuple[list[str], dict[str, str]]:
    extra = {"PYTHONPATH": python_path} if python_path else {}
    return [sys.executable, "-m", "projector", "mcp", "--provider", "up", "--config", str(config)], extra


def list_times(command: list[str], cwd: Path, env: dict[str, str], lists: int) -> tuple[float, int]:
    """Median milliseconds of one tools/list, and how many tools it listed."""
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def ask(message: dict) -> dict:
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        return json.loads(process.stdout.readline())

    ask(INIT)
    process.stdin.write(json.dumps(INITIALIZED).encode() + b"\n")
    times, count = [], 0
    for n in range(1, lists + 1):
        started = time.perf_counter()
        answer = ask({"jsonrpc": "2.0", "id": n, "method": "tools/list", "params": {}})
        times.append((time.perf_counter() - started) * 1000)
        count = len(answer["result"]["tools"])
    process.stdin.close()
    process.wait(10)
    return statistics.median(times[len(times) // 5:]), count  # the first fifth warms the connection


def instructions(command: list[str], cwd: Path, env: dict[str, str], calls: int, folder: Path, method: str = "tools/call") -> int:
    """Callgrind's instruction count of a whole session: initialize and ``calls`` requests
    (an allowed tools/call, or a tools/list). Stdin stays open until every answer is in: a
    session read from a file ends at its end, and under callgrind the bridge's drain after EOF
    ran out before 200 calls were answered."""
    params = {"name": "search", "arguments": {"query": "q" * 64}} if method == "tools/call" else {}
    messages = [INIT, INITIALIZED] + [{"jsonrpc": "2.0", "id": n, "method": method, "params": params} for n in range(1, calls + 1)]
    out = folder / "callgrind.out"
    process = subprocess.Popen(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command], cwd=cwd, env=env,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    answered = 0
    for message in messages:  # one at a time: the answers never fill the pipe while requests wait
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()
        if "id" in message:
            answer = json.loads(process.stdout.readline() or b"{}")
            answered += "result" in answer and answer.get("id") != 0
    process.stdin.close()
    process.wait(600)
    assert answered == calls, f"{answered} of {calls} calls answered"
    summary = next(line for line in out.read_text().splitlines() if line.startswith(("summary:", "totals:")))
    return int(summary.split()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tools", type=int, default=500)
    parser.add_argument("--runs", type=int, default=40, help="tools/list runs timed per row (their median is shown)")
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--base", help="a tree of the code before the filter (its src/ is put first on PYTHONPATH)")
    parser.add_argument("--no-callgrind", action="store_true")
    options = parser.parse_args()
    server, url = upstream(options.tools)
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        config, env = layout(root, url)
        command, _ = bridge(config)
        print(f"tools/list of {options.tools + 1} tools, median of {options.runs} (ms):")
        plain, plain_count = list_times(command, root / "plain", env, options.runs)
        ruled, ruled_count = list_times(command, root / "ruled", env, options.runs)
        print(f"  no rule      {plain:7.3f}  ({plain_count} tools)")
        print(f"  rule         {ruled:7.3f}  ({ruled_count} tools)")
        print(f"  difference   {ruled - plain:+7.3f}  (target: ≤ +1 ms)")
        if options.no_callgrind:
            return
        print(f"\nan allowed tools/call, instructions per call (callgrind, {options.calls} calls less none):")
        rows = [("no rule", root / "plain", None), ("rule", root / "ruled", None)]
        if options.base:
            base = str(Path(options.base) / "src")
            rows[:0] = [("before (--base), no rule", root / "plain", base), ("before (--base), rule", root / "ruled", base)]
        for name, folder, python_path in rows:
            command, extra = bridge(config, python_path)
            here = {**env, **extra}
            instructions(command, folder, here, 1, root)  # a first start writes the bytecode caches: not counted
            per_call = (instructions(command, folder, here, options.calls, root) - instructions(command, folder, here, 0, root)) / options.calls
            print(f"  {name:26s} {per_call / 1000:8.1f}k")
        lists = max(options.runs // 4, 5)
        print(f"\na tools/list of {options.tools + 1} tools, instructions per list (callgrind, {lists} lists less none):")
        counted = {}
        for name, folder in (("no rule", root / "plain"), ("rule", root / "ruled")):
            command, _ = bridge(config)
            counted[name] = (instructions(command, folder, env, lists, root, "tools/list") - instructions(command, folder, env, 0, root, "tools/list")) / lists
            print(f"  {name:26s} {counted[name] / 1e6:8.2f} M")
        print(f"  difference {(counted['rule'] - counted['no rule']) / 1e6:+.2f} M instructions")
        filtering, encoding = _in_process(options.tools)
        print(f"  in process, best of 9 x 20: filtering {filtering:.3f} ms + encoding what is kept {encoding:.3f} ms "
              f"= {filtering + encoding:.3f} ms more than passing the provider's bytes on (target: ≤ +1 ms)")
    server.shutdown()


def _in_process(tools: int) -> tuple[float, float]:
    """The filter's own steps on a list like the upstream's, timed in this process: what the
    bridge adds to a filtered tools/list (the unfiltered one passes the provider's bytes on)."""
    from projector.core.tools import rule
    from projector.runtime.bridge.stdio import encode
    from projector.runtime.toolfilter import filtered_list

    listed = [{"name": f"tool_{n}", "description": f"Tool number {n}: does one thing well.",
               "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}
              for n in range(tools)] + [{"name": "search", "description": "Search.", "inputSchema": {"type": "object"}}]
    response = {"jsonrpc": "2.0", "id": 1, "result": {"tools": listed}}
    said = rule({"allow": ["tool_1*", "tool_2*", "search"], "deny": ["tool_*9"]})
    kept = filtered_list(response, said)

    def best(work: object) -> float:
        runs = []
        for _ in range(9):
            started = time.perf_counter()
            for _ in range(20):
                work()  # type: ignore[operator]
            runs.append((time.perf_counter() - started) / 20 * 1000)
        return min(runs)

    return best(lambda: filtered_list(response, said)), best(lambda: encode(kept))


if __name__ == "__main__":
    main()
