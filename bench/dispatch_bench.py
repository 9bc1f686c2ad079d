"""How long `projector dispatch EVENT` takes a client's tool call, against `python -c pass` in the
same run.

    .venv/bin/python bench/dispatch_bench.py [--runs N]

Targets (issue 16): with no hook for the folder, at most 2x `python -c pass`; with one hook, at
most that plus the hook's own time (`/bin/sh -c true`, fed the same payload, measured here too)
plus 5 ms. Each round runs every case once, interleaved, so a busy machine slows them alike; the
figures are medians over the rounds, the ratios medians of each round's ratio. The model has a
hook in another workspace (the table is read, the folder resolved, nothing runs) and, for the
second case, one in the folder's workspace. Everything runs in a temporary HOME.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PAYLOAD = {"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "echo hi"}}


def timed(command: list[str], env: dict[str, str], stdin: bytes) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, env=env, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{command} failed: {done.stderr.decode()}")
    return elapsed


def setup(root: Path, binary: str) -> tuple[list[str], dict[str, str], Path, Path]:
    """A model with one hook in ``root/work/hooked`` and none in ``root/work/plain``: the
    dispatcher's command for PreToolUse, its environment, and the two folders."""
    hooked, plain = root / "work" / "hooked", root / "work" / "plain"
    for folder in (hooked, plain):
        folder.mkdir(parents=True)
    model = root / "projector.yaml"
    model.write_text(f"version: 1\nproviders: {{}}\nbindings:\n  {hooked}:\n    hooks:\n      quick: {{event: PreToolUse, command: 'true'}}\n")
    env = {"HOME": str(root), "XDG_STATE_HOME": str(root / "state"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    return [binary, "dispatch", "--config", str(model), "PreToolUse"], env, hooked, plain


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40, help="rounds: each runs every case once")
    rounds = parser.parse_args().runs
    binary = shutil.which("projector", path=str(Path(sys.executable).parent)) or shutil.which("projector")
    if binary is None:
        raise SystemExit("projector is not installed beside this Python (make test installs it)")
    with tempfile.TemporaryDirectory() as tmp:
        dispatch, env, hooked, plain = setup(Path(tmp), binary)
        cases = {
            "python -c pass": ([sys.executable, "-c", "pass"], PAYLOAD),
            "the hook alone: /bin/sh -c true": (["/bin/sh", "-c", "true"], PAYLOAD),
            "dispatch, no hook for the folder": (dispatch, {**PAYLOAD, "cwd": str(plain)}),
            "dispatch, one hook (true)": (dispatch, {**PAYLOAD, "cwd": str(hooked)}),
        }
        inputs = {name: json.dumps(payload).encode() for name, (_, payload) in cases.items()}
        for name, (command, _) in cases.items():  # warm the page cache and the table of hooks
            timed(command, env, inputs[name])
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(rounds):
            for name, (command, _) in cases.items():
                times[name].append(timed(command, env, inputs[name]))
    base = times["python -c pass"]
    hook = times["the hook alone: /bin/sh -c true"]
    none = times["dispatch, no hook for the folder"]
    one = times["dispatch, one hook (true)"]
    print(f"{'case':36} {'median ms':>10} {'x pass':>8}")
    for name, values in times.items():
        ratio = statistics.median(v / b for v, b in zip(values, base))
        print(f"{name:36} {statistics.median(values):10.1f} {ratio:8.2f}")
    no_hook_ratio = statistics.median(v / b for v, b in zip(none, base))
    # one hook, against its budget: 2x pass + the hook's own time + 5 ms, per round
    over = statistics.median(o - (2 * b + h + 5.0) for o, b, h in zip(one, base, hook))
    print(f"\nno hook for the folder: {no_hook_ratio:.2f}x python -c pass (target <= 2.00x)"
          f" {'ok' if no_hook_ratio <= 2.0 else 'MISSED'}")
    print(f"one hook: {over:+.1f} ms against 2x pass + the hook's own time + 5 ms (target <= 0)"
          f" {'ok' if over <= 0 else 'MISSED'}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
