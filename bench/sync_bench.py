"""How long `projector sync` takes, against `python3 -c pass` measured in the same run.

    .venv/bin/python bench/sync_bench.py [--runs N]

Prints medians (ms) and ratios for: a full sync of examples/projector.yaml into a fresh sandbox
HOME (6 clients, files created), a sync where every file already exists with other content, and
a sync with nothing to change. Everything runs in a temporary HOME; the real one is not touched.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "projector.yaml"


def timed(command: list[str], env: dict[str, str], prepare=None) -> float:
    if prepare:
        prepare()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def median(command, env, runs, prepare=None) -> float:
    timed(command, env, prepare)  # warm the page cache
    return statistics.median(timed(command, env, prepare) for _ in range(runs))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        binary = shutil.which("projector") or str(Path(sys.executable).parent / "projector")
        env = {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local/state"),
               "PATH": f"{Path(binary).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
        sync = [binary, "sync", "--quiet", "--config", str(EXAMPLE)]

        def fresh() -> None:
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir()
            shutil.copy(ROOT / "examples" / "claude.json", home / ".claude.json")

        baseline = median([sys.executable, "-c", "pass"], env, runs)
        full = median(sync, env, runs, prepare=fresh)
        fresh()
        subprocess.run(sync, env=env, check=True)
        noop = median(sync, env, runs)
    print(f"python3 -c pass                     {baseline:8.1f} ms   1.00x")
    print(f"projector sync, 6 files created     {full:8.1f} ms   {full / baseline:5.2f}x")
    print(f"projector sync, nothing to change   {noop:8.1f} ms   {noop / baseline:5.2f}x")
    print(f"(median of {runs} runs each; example model: 2 providers, 3 bindings, 6 clients)")


if __name__ == "__main__":
    main()
