"""Shared workspace servers (``shared: true``): memory, the second session's start and the cost
per request, each against a baseline measured in the same run.

    .venv/bin/python bench/host_bench.py [--sessions 10] [--runs 15] [--calls 500] [--projector PATH]

1. Memory: N sessions in one workspace against a server that holds 50 MB from its start, twice:
   the official SDK's server (tests/servers/report_server.py --allocate 50, what a Python MCP
   server weighs) and a stdlib-only one (the least a server can weigh, so the host's share is at
   its largest). Baseline: one unshared session (the bridge execs the server: the session is
   that process). Unshared, N sessions are N servers (today, without ``shared``). Shared, they
   are N bridges (each a ``/bin/sh`` waiting for its session's end), one host and one server:
   target total RSS ≤ 1.3× one session's. PSS is printed beside RSS: RSS counts a page shared by
   several processes (libc, the shell) once per process, PSS divides it between them.
2. Start: spawn → ``initialize`` reply of a session in a workspace whose host already runs (a
   second session), against ``python -c pass``: target ≤ 3×. The bridge's own start (a session
   it answers itself: a provider turned off there) is printed for reference.
3. Per request: a ``tools/call`` round trip through a session started by the bridge, against the
   same round trip on a session attached to the host directly (this process hands the host its
   own pipes): target ≤ +0.1 ms. The server without any host is printed for the host's own cost.
Everything runs in a temporary HOME with its own runtime folder.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import interpreter  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SERVER = '''import json, sys
held = bytearray(50 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
for line in sys.stdin:
    message = json.loads(line)
    if "id" not in message:
        continue
    if message.get("method") == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "heavy", "version": "1"}}
    else:
        result = {"content": [{"type": "text", "text": "ok"}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\\n")
    sys.stdout.flush()
'''
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def call(n: int) -> dict:
    return {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "anything", "arguments": {}}}


class Session:
    """A session over two pipes: a spawned process's stdio, or pipes handed to a host."""

    def __init__(self, write_fd: int, read_fd: int, process: subprocess.Popen | None = None):
        self.writer, self.reader, self.process = os.fdopen(write_fd, "wb", buffering=0), os.fdopen(read_fd, "rb"), process

    @classmethod
    def spawn(cls, command: list[str], cwd: Path, env: dict) -> Session:
        process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        return cls(os.dup(process.stdin.fileno()), os.dup(process.stdout.fileno()), process)

    def ask(self, message: dict) -> dict:
        self.writer.write(json.dumps(message).encode() + b"\n")
        while True:
            answer = json.loads(self.reader.readline())
            if answer.get("id") == message.get("id"):
                return answer

    def close(self) -> None:
        self.writer.close()
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait(timeout=30)
        self.reader.close()


def median_ms(values: list[float]) -> float:
    return statistics.median(values) * 1000


def memory(pid: int) -> tuple[int, int]:
    """(RSS, PSS) of ``pid`` in bytes."""
    with open(f"/proc/{pid}/status") as status:
        rss = next(int(line.split()[1]) for line in status if line.startswith("VmRSS:")) * 1024
    with open(f"/proc/{pid}/smaps_rollup") as rollup:
        pss = next(int(line.split()[1]) for line in rollup if line.startswith("Pss:")) * 1024
    return rss, pss


def total(pids: list[int]) -> tuple[int, int]:
    sizes = [memory(pid) for pid in pids]
    return sum(s[0] for s in sizes), sum(s[1] for s in sizes)


def host_status(runtime: Path, provider: str) -> dict:
    from projector.runtime.host import attach

    (status,) = [h for h in attach.hosts(os.environ) if h["provider"] == provider]
    return status


def spawn_to_initialize(command: list[str], cwd: Path, env: dict) -> float:
    start = time.perf_counter()
    session = Session.spawn(command, cwd, env)
    assert "result" in session.ask(INIT)
    elapsed = time.perf_counter() - start
    session.close()
    return elapsed


def memory_rows(label: str, alone_bridge: list[str], shared_bridge: list[str], workspace: Path, env: dict, runtime: Path,
                count: int) -> None:
    alone = [Session.spawn(alone_bridge, workspace, env) for _ in range(count)]
    for session in alone:
        assert "result" in session.ask(INIT)
    one_rss, one_pss = memory(alone[0].process.pid)
    unshared_rss, unshared_pss = total([s.process.pid for s in alone])
    for session in alone:
        session.close()
    together = [Session.spawn(shared_bridge, workspace, env) for _ in range(count)]
    for session in together:
        assert "result" in session.ask(INIT)
    status = host_status(runtime, shared_bridge[shared_bridge.index("--provider") + 1])
    shared_rss, shared_pss = total([s.process.pid for s in together] + [status["pid"], status["server_pid"]])
    waiter_rss, waiter_pss = memory(together[-1].process.pid)
    host_rss, host_pss = memory(status["pid"])
    server_rss, _ = memory(status["server_pid"])
    for session in together:
        session.close()
    mb = lambda n: f"{n / 1e6:6.1f} MB"  # noqa: E731
    print(f"memory, {count} sessions in one workspace, {label} holding 50 MB        RSS        PSS")
    print(f"  one unshared session (baseline)                          {mb(one_rss)}  {mb(one_pss)}")
    print(f"  {count} unshared sessions                                    {mb(unshared_rss)}  {mb(unshared_pss)}"
          f"   {unshared_rss / one_rss:5.2f}× RSS")
    print(f"  {count} shared sessions: {count} waiters + host + server           {mb(shared_rss)}  {mb(shared_pss)}"
          f"   {shared_rss / one_rss:5.2f}× RSS, {shared_pss / one_pss:4.2f}× PSS   (target ≤ 1.3×)")
    print(f"    of which: server {mb(server_rss).strip()}, host {mb(host_rss).strip()} (PSS {mb(host_pss).strip()}), "
          f"each waiter {mb(waiter_rss).strip()} (PSS {mb(waiter_pss).strip()})")


def per_call(session: Session, calls: int) -> float:
    for n in range(50):
        session.ask(call(100_000 + n))  # warm up
    times = []
    for n in range(calls):
        start = time.perf_counter()
        assert "result" in session.ask(call(n + 1))
        times.append(time.perf_counter() - start)
    return median_ms(times)


def attached_directly(socket_path: str) -> Session:
    """A session handed to the host by this process itself: no bridge anywhere."""
    from projector.runtime.host import ATTACH, attach

    connection = attach.connect(socket_path)
    assert connection is not None
    to_host_r, to_host_w = os.pipe()
    from_host_r, from_host_w = os.pipe()
    socket.send_fds(connection, [ATTACH], [to_host_r, from_host_w])
    os.close(to_host_r)
    os.close(from_host_w)
    session = Session(to_host_w, from_host_r)
    session.connection = connection  # the host ends the session when this closes
    assert "result" in session.ask(INIT)
    return session


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--projector", help="a projector console script installed as a user would (`pip install .`): the "
                        "bridge and the `python -c pass` baseline use its interpreter (default: this one's)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory(prefix="pjb-", dir="/tmp") as runtime_dir:
        root, runtime = Path(folder), Path(runtime_dir)
        workspace = root / "home" / "work" / "a"
        workspace.mkdir(parents=True)
        server = root / "heavy.py"
        server.write_text(SERVER)
        py = sys.executable
        config = root / "projector.yaml"
        sdk = ROOT / "tests" / "servers" / "report_server.py"
        config.write_text(
            "version: 1\nproviders:\n"
            f"  heavy: {{command: {py}, args: [{server}]}}\n"
            f"  heavy-shared: {{command: {py}, args: [{server}], shared: true, linger: 1}}\n"
            f"  sdk: {{command: {py}, args: [{sdk}, --allocate, '50']}}\n"
            f"  sdk-shared: {{command: {py}, args: [{sdk}, --allocate, '50'], shared: true, linger: 1}}\n"
            f"  off: {{command: {py}, enabled: false}}\n"
        )
        env = {"HOME": str(root / "home"), "PATH": f"{Path(py).parent}:{os.environ['PATH']}", "XDG_STATE_HOME": str(root / "state"),
               "XDG_CONFIG_HOME": str(root / "config"), "XDG_RUNTIME_DIR": str(runtime)}
        os.environ.update(XDG_RUNTIME_DIR=str(runtime), XDG_STATE_HOME=env["XDG_STATE_HOME"])
        script = options.projector or str(Path(py).parent / "projector")
        installed = interpreter(script)  # the script's own Python
        bridge = lambda name: [installed, script, "mcp", "--provider", name, "--config", str(config)]  # noqa: E731
        count = options.sessions

        # 1. memory
        for label, name in (("the official SDK's server", "sdk"), ("a stdlib-only server", "heavy")):
            memory_rows(label, bridge(name), bridge(f"{name}-shared"), workspace, env, runtime, count)
        together = [Session.spawn(bridge("heavy-shared"), workspace, env) for _ in range(count)]
        for session in together:
            assert "result" in session.ask(INIT)
        status = host_status(runtime, "heavy-shared")

        # 2. the second session's start
        baseline = []
        for _ in range(options.runs):
            start = time.perf_counter()
            subprocess.run([installed, "-c", "pass"], check=True)
            baseline.append(time.perf_counter() - start)
        second, own = [], []
        for _ in range(options.runs):
            second.append(spawn_to_initialize(bridge("heavy-shared"), workspace, env))
            own.append(spawn_to_initialize(bridge("off"), workspace, env))
        print(f"\npython -c pass (baseline)                        {median_ms(baseline):7.1f} ms   1.00×")
        print(f"second session: spawn → initialize reply         {median_ms(second):7.1f} ms   "
              f"{median(second) / median(baseline):4.2f}×   (target ≤ 3×)")
        print(f"  the bridge's own start (answered in-process)   {median_ms(own):7.1f} ms   {median(own) / median(baseline):4.2f}×")

        # 3. per request
        through_bridge = per_call(together[0], options.calls)
        direct_session = attached_directly(status["socket"])
        direct = per_call(direct_session, options.calls)
        direct_session.close()
        bare = Session.spawn([py, str(server)], workspace, env)
        bare.ask(INIT)
        no_host = per_call(bare, options.calls)
        bare.close()
        for session in together:
            session.close()
        print(f"\ntools/call round trip, median of {options.calls}")
        print(f"attached to the host directly (baseline)         {direct:7.3f} ms")
        print(f"through a session the bridge attached            {through_bridge:7.3f} ms   "
              f"overhead {through_bridge - direct:+.3f} ms (target ≤ +0.1 ms)")
        print(f"the server alone, no host (the host's own cost)  {no_host:7.3f} ms   host adds {direct - no_host:+.3f} ms")


def median(values: list[float]) -> float:
    return statistics.median(values)


if __name__ == "__main__":
    main()
