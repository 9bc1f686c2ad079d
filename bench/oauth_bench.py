"""Issue 28's three targets, side by side in one run: a bridge's start with a stored OAuth token
against the same start with a token variable (≤ 1.1×); the cost of one proxied request in each
(unchanged); twenty sessions starting at once on an expired token (one refresh request).

    .venv/bin/python bench/oauth_bench.py [--runs N] [--sessions N]

Two models that differ in one line: provider `kb` with `token_env: KB_TOKEN`, and the same
provider with `oauth: true` and a valid token `projector login` would have stored (the state
folder's 0600 file; its refresh token in the keyring is not read at start). Each start is spawn →
initialize proxied to a stdlib upstream (tests/servers/faulty.py) → EOF, with the model cache
kept. Figures: callgrind instructions above `python -c pass` (load-independent), and the
median wall and CPU times over interleaved rounds with their ratio. One request's cost is the
difference in instructions between a session of 110 tools/calls and one of 10, over 100. The race
starts N bridges at once with the stored token expired against a stdlib token endpoint (in this
process, 200 ms per answer, refresh tokens rotating) and counts the refresh requests it gets.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bridge_bench import INITIALIZED, Stdio, call  # noqa: E402
from measure import Case, callgrind, collected, instructions, load, median_ms, ratio, rounds, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-token"
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}


def case(label: str, root: Path, url: str, auth: str, env: dict[str, str]) -> Case:
    root.mkdir()
    (root / "bound").mkdir()
    model = root / "projector.yaml"
    model.write_text(f"version: 1\nproviders:\n  kb:\n    url: {url}\n    {auth}\nbindings:\n  {root}/bound:\n    kb: [alpha]\n")
    env = {"HOME": str(root), "PATH": "/usr/bin:/bin", "XDG_STATE_HOME": str(root / "state"), **env}
    command = [sys.executable, "-m", "projector", "mcp", "--provider", "kb", "--config", str(model)]
    return Case(label, command, env, stdin=(json.dumps(INIT) + "\n").encode(), cwd=str(root / "bound"))


CALLS = (10, 110)


def per_request(start: Case) -> int | None:
    """Instructions of one proxied tools/call in ``start``'s session (valgrind: None without)."""
    import shutil

    if shutil.which("valgrind") is None:
        return None
    counts = []
    for calls in CALLS:
        with tempfile.TemporaryDirectory() as scratch:
            log = Path(scratch) / "callgrind.log"
            stdio = Stdio(callgrind(log) + start.command, Path(start.cwd or "."), dict(start.env, PYTHONHASHSEED="0"))
            stdio.ask(json.loads(start.stdin))
            stdio.tell(INITIALIZED)
            for n in range(calls):
                if "result" not in stdio.ask(call(n + 1)):
                    raise RuntimeError(f"a proxied call failed in {start.label}")
            stdio.close()
            counts.append(collected(log.read_bytes()) or 0)
    return (counts[1] - counts[0]) // (CALLS[1] - CALLS[0])


class TokenEndpoint:
    """A refresh grant with rotation (each refresh token works once), 200 ms per answer, counting."""

    def __init__(self) -> None:
        import http.server
        import threading
        from urllib.parse import parse_qs

        self.refreshes = 0
        self.valid = {"refresh-1"}
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                form = {k: v[0] for k, v in parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode()).items()}
                endpoint.refreshes += 1
                time.sleep(0.2)
                token = form.get("refresh_token")
                ok = token in endpoint.valid
                endpoint.valid.discard(token)
                fresh = f"refresh-{endpoint.refreshes + 1}"
                endpoint.valid.add(fresh)
                body = json.dumps({"access_token": TOKEN, "token_type": "Bearer", "expires_in": 3600, "refresh_token": fresh}
                                  if ok else {"error": "invalid_grant"}).encode()
                self.send_response(200 if ok else 400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def race(stored: Case, sessions: int) -> tuple[int, int, float]:
    """``sessions`` bridges started at once on an expired stored token: the refresh requests the
    token endpoint got, the sessions that started proxied, and the seconds until the last did."""
    from projector.core import tokenstore

    endpoint = TokenEndpoint()
    state = stored.env["XDG_STATE_HOME"] + "/projector"
    try:
        tokenstore.write(state, "kb", tokenstore.Tokens(access_token="expired", expires_at=time.time() - 60, token_endpoint=endpoint.url,
                                                        client_id="bench", auth_method="none",
                                                        secrets=tokenstore.Secrets(refresh_token="refresh-1")))
        started = time.perf_counter()
        bridges = [subprocess.Popen(stored.command, env=stored.env, cwd=stored.cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL) for _ in range(sessions)]
        answers = [bridge.communicate(stored.stdin, timeout=120)[0] for bridge in bridges]
        return endpoint.refreshes, sum(b'"serverInfo"' in answer for answer in answers), time.perf_counter() - started
    finally:
        endpoint.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sessions", type=int, default=20)
    options = parser.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from projector.core import tokenstore

    upstream = subprocess.Popen([sys.executable, str(ROOT / "tests" / "servers" / "faulty.py")], stdout=subprocess.PIPE)
    try:
        url = upstream.stdout.readline().decode().strip()
        with tempfile.TemporaryDirectory() as folder:
            base = Path(folder)
            variable = case("token variable (token_env)", base / "variable", url, "token_env: KB_TOKEN", {"KB_TOKEN": TOKEN})
            stored = case("stored OAuth token (oauth: true)", base / "oauth", url, "oauth: true", {})
            tokenstore.write(str(base / "oauth" / "state" / "projector"), "kb",
                             tokenstore.Tokens(access_token=TOKEN, expires_at=time.time() + 86400,
                                               secrets=tokenstore.Secrets(refresh_token="bench-refresh")))
            baseline = Case("python -c pass", [sys.executable, "-c", "pass"], {"PATH": "/usr/bin:/bin"})
            for start in (variable, stored):
                done = subprocess.run(start.command, env=start.env, input=start.stdin, cwd=start.cwd, capture_output=True, timeout=60)
                assert b'"result"' in done.stdout, done.stdout + done.stderr  # and it fills the model cache
            pass_ir, variable_ir, stored_ir = (instructions(c) for c in (baseline, variable, stored))
            rounds([variable, stored], options.runs)
            print(f"{options.runs} rounds; {load()}")
            rows = []
            for start, counted in ((variable, variable_ir), (stored, stored_ir)):
                above = f"{(counted - pass_ir) / 1e6:.1f} M" if counted and pass_ir else "no valgrind"
                rows.append((start.label, [above, f"{median_ms(start):.1f} ms", f"{median_ms(start, cpu=True):.1f} ms"]))
            table(rows, ["instructions > pass", "wall (median)", "CPU (median)"])
            if variable_ir and stored_ir and pass_ir:
                print(f"stored / variable: {(stored_ir - pass_ir) / (variable_ir - pass_ir):.3f}× instructions above pass, "
                      f"{ratio(stored, variable):.3f}× wall, {ratio(stored, variable, cpu=True):.3f}× CPU (target ≤ 1.1×)")
            variable_call, stored_call = per_request(variable), per_request(stored)
            if variable_call and stored_call:
                print(f"one proxied tools/call: {stored_call / 1e3:.1f} k instructions with the stored token, "
                      f"{variable_call / 1e3:.1f} k with the token variable ({stored_call / variable_call:.3f}×; target: unchanged)")
            refreshes, proxied, seconds = race(stored, options.sessions)
            print(f"{options.sessions} sessions at once on an expired token: {refreshes} refresh request(s), "
                  f"{proxied} of {options.sessions} sessions proxied, the last after {seconds:.2f} s (target: 1 refresh)")
    finally:
        upstream.kill()
        upstream.wait()


if __name__ == "__main__":
    main()
