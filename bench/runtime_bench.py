"""The workspace runtime's start-up cost: a local server started through the bridge against the
same server started directly, measured in the same run.

    .venv/bin/python bench/runtime_bench.py [--runs N]

Spawn → first ``initialize`` reply, median of N, for:
- a minimal stdio server (a few lines of Python) run directly: the baseline;
- the same through ``projector mcp --provider P`` in a bound workspace (the bridge resolves the
  workspace, builds the overlay and execs the server), with an env-only binding, with two .env
  files, and with ``direnv: true`` (when direnv is installed);
- the official SDK's server (tests/servers/report_server.py) directly and through the bridge,
  for the size of the overhead next to a real server's own start-up.
After the exec there is no bridge in the path: per-message overhead is zero by construction.
Everything runs in a temporary HOME.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench")]
from bridge_bench import spawn_to_initialize  # noqa: E402

MINIMAL = '''import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("method") == "initialize":
        print(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"protocolVersion": "2025-06-18",
              "capabilities": {}, "serverInfo": {"name": "minimal", "version": "1"}}}), flush=True)
'''


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        home, workspace = root / "home", root / "home" / "work" / "a"
        workspace.mkdir(parents=True)
        minimal = root / "minimal.py"
        minimal.write_text(MINIMAL)
        report = ROOT / "tests" / "servers" / "report_server.py"
        (workspace / ".env").write_text("A=1\nB=${A}/x\n")
        (workspace / ".env.local").write_text("C=3\n")
        (workspace / ".envrc").write_text('export VIRTUAL_ENV="$PWD/.venv"\nPATH_add bin\n')
        env = {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
               "XDG_STATE_HOME": str(root / "state"), "XDG_DATA_HOME": str(root / "data"), "XDG_CONFIG_HOME": str(root / "config")}
        has_direnv = shutil.which("direnv") is not None
        if has_direnv:
            subprocess.run(["direnv", "allow", str(workspace)], env=env, check=True, capture_output=True)
        config = root / "projector.yaml"
        py = sys.executable
        config.write_text(
            "version: 1\nproviders:\n"
            f"  plain: {{command: {py}, args: [{minimal}]}}\n"
            f"  files: {{command: {py}, args: [{minimal}]}}\n"
            f"  direnv: {{command: {py}, args: [{minimal}]}}\n"
            f"  sdk: {{command: {py}, args: [{report}]}}\n"
            f"bindings:\n  {workspace}:\n"
            "    plain: {env: {MODE: bench}}\n"
            "    files: {env_files: [.env, .env.local]}\n"
            "    direnv: {direnv: true}\n"
            "    sdk: {env: {MODE: bench}}\n"
        )
        bridge = lambda name: [py, "-m", "projector", "mcp", "--provider", name, "--config", str(config)]  # noqa: E731
        spawn_to_initialize(bridge("plain"), workspace, env, 2)  # warm the model cache and the page cache
        rows = [("minimal server, directly (baseline)", spawn_to_initialize([py, str(minimal)], workspace, env, runs))]
        rows.append(("  through the bridge, env binding", spawn_to_initialize(bridge("plain"), workspace, env, runs)))
        rows.append(("  through the bridge, two .env files", spawn_to_initialize(bridge("files"), workspace, env, runs)))
        if has_direnv:
            rows.append(("  through the bridge, direnv export", spawn_to_initialize(bridge("direnv"), workspace, env, runs)))
        sdk_runs = max(3, runs // 3)
        rows.append(("official SDK server, directly (baseline)", spawn_to_initialize([py, str(report)], workspace, env, sdk_runs)))
        rows.append(("  through the bridge, env binding", spawn_to_initialize(bridge("sdk"), workspace, env, sdk_runs)))
    print(f"spawn → initialize reply, median of {runs} ({sdk_runs} for the SDK server)")
    baseline = rows[0][1]
    for label, value in rows:
        if not label.startswith("  "):
            baseline = value
            print(f"{label:45s} {value:7.1f} ms")
        else:
            print(f"{label:45s} {value:7.1f} ms  (+{value - baseline:5.1f} ms, {value / baseline:4.2f}×)")
    if not has_direnv:
        print("direnv is not installed: its row was skipped")


if __name__ == "__main__":
    main()
