"""A bridge's start with a stored OAuth token against the same start with a token variable, side
by side in one run (issue 28's target: ≤ 1.1×).

    .venv/bin/python bench/oauth_bench.py [--runs N]

Two models that differ in one line: provider `kb` with `token_env: KB_TOKEN`, and the same
provider with `oauth: true` and a valid token `projector login` would have stored (the state
folder's 0600 file; its refresh token in the keyring is not read at start). Each start is spawn →
initialize proxied to a stdlib upstream (tests/servers/faulty.py) → EOF, with the model cache
kept. Figures: callgrind instructions above `python -c pass` (load-independent), and the
median wall and CPU times over interleaved rounds with their ratio.
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
from measure import Case, instructions, load, median_ms, ratio, rounds, table  # noqa: E402

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=15)
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
    finally:
        upstream.kill()
        upstream.wait()


if __name__ == "__main__":
    main()
