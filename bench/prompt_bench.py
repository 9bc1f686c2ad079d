"""What a shell prompt costs after changes that cannot change what sync writes, against
`python3 -c pass` measured in the same run.

    .venv/bin/python bench/prompt_bench.py [--runs N] [--projector PATH]...

For each projector given (default: the one on PATH, else this checkout's .venv), in a sandbox
HOME where examples/projector.yaml was synced by that projector's own shell hook:

- Claude Code rewrote ~/.claude.json (a 0.4 MB file, as a long-used one is) with projector's
  entries untouched: the time of what the hook then runs, `projector sync --quiet --hook`
  (target: at most 3x `python3 -c pass`);
- a file was created in a bound repository's root: the bash hook's prompt, from `source` to
  return, minus the same bash without the call, and whether it started a process.

Give an older projector with --projector to measure before and after in one run, e.g. a
launcher `#!/bin/sh\nPYTHONPATH=/tmp/main/src exec .venv/bin/python -c "from projector.entry
import main; main()" "$@"` (as a console script starts it: no runpy).
Everything runs in a temporary HOME; the real one is not touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sync_bench import EXAMPLE, ROOT  # bench/ is the script's folder: on sys.path

BASELINE = [sys.executable, "-c", "pass"]


def timed(command: list[str], env: dict[str, str], prepare=None) -> float:
    """One run of ``command`` in ms (``prepare`` first, untimed)."""
    if prepare:
        prepare()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


def median(command: list[str], env: dict[str, str], runs: int, prepare=None) -> float:
    timed(command, env, prepare)  # warm the page cache
    return statistics.median(timed(command, env, prepare) for _ in range(runs))


def long_used_claude_file(path: Path) -> None:
    """~/.claude.json as months of use leave it: hundreds of project folders with history."""
    data = json.loads(path.read_text()) if path.exists() else {}
    data["projects"] = {
        f"/home/me/src/repo-{i}": {"allowedTools": [], "history": [{"display": f"fix bug {j} " * 8} for j in range(20)],
                                   "mcpServers": {}, "hasTrustDialogAccepted": True}
        for i in range(150)
    }
    path.write_text(json.dumps(data, indent=2))


def claude_rewrites(path: Path) -> None:
    """What Claude Code does many times a session: read, bump a counter, write the whole file."""
    data = json.loads(path.read_text())
    data["numStartups"] = data.get("numStartups", 0) + 1
    path.write_text(json.dumps(data, indent=2))


def measure(projector: str, runs: int, tmp: Path) -> tuple[float, float, float, int]:
    """(the prompt after a rewrite, ms; its ratio to `python3 -c pass`, each run against a
    baseline taken just before it, so a busy machine weighs on both alike; the prompt after a
    file was created, ms; how many of those prompts started projector)."""
    home = tmp / "home"
    work = home / "work" / "project-a"
    (work / "tools").mkdir(parents=True)
    (home / "work" / "project-b").mkdir(parents=True)
    model = tmp / "projector.yaml"
    shutil.copy(EXAMPLE, model)
    log = tmp / "started"
    shim = tmp / "bin" / "projector"  # projector on PATH, counting its starts
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {projector} "$@"\n')
    shim.chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{shim.parent}:/usr/bin:/bin", "LANG": "C.UTF-8", "PROJECTOR_CONFIG": str(model)}
    claude = home / ".claude.json"
    long_used_claude_file(claude)
    hook = subprocess.run([str(shim), "hook", "bash"], env=env, check=True, capture_output=True, text=True).stdout
    (tmp / "hook.sh").write_text(hook)
    subprocess.run(["bash", "--norc", "-c", f"source {tmp}/hook.sh; _projector_hook"], env=env, check=True)
    pairs = []
    for _ in range(runs + 1):
        base = timed(BASELINE, {"PATH": "/usr/bin:/bin"})
        pairs.append((timed([str(shim), "sync", "--quiet", "--hook"], env, lambda: claude_rewrites(claude)), base))
    pairs = pairs[1:]  # the first warms the page cache
    rewritten = statistics.median(r for r, _ in pairs)
    ratio = statistics.median(r / b for r, b in pairs)

    created = iter(range(10**6))
    make_file = lambda: (work / f"notes-{next(created)}.txt").write_text("x\n")  # noqa: E731
    log.unlink()
    prompt = median(["bash", "--norc", "-c", f"source {tmp}/hook.sh; _projector_hook"], env, runs, make_file)
    bare = median(["bash", "--norc", "-c", f"source {tmp}/hook.sh"], env, runs)
    started = len(log.read_text().splitlines()) if log.exists() else 0
    return rewritten, ratio, prompt - bare, started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--projector", action="append", help="a projector to measure (repeatable)")
    options = parser.parse_args()
    found = shutil.which("projector") or str(ROOT / ".venv" / "bin" / "projector")
    with tempfile.TemporaryDirectory() as tmp:
        baseline = median(BASELINE, {"PATH": "/usr/bin:/bin"}, options.runs * 2)
        print(f"python3 -c pass{'':52}{baseline:8.1f} ms   1.00x")
        for index, projector in enumerate(options.projector or [found]):
            rewritten, ratio, prompt, started = measure(projector, options.runs, Path(tmp) / str(index))
            print(f"{projector}")
            print(f"  prompt after Claude rewrote ~/.claude.json, entries untouched {rewritten:8.1f} ms   "
                  f"{ratio:5.2f}x   (target <= 3x; each run against python3 -c pass just before it)")
            print(f"  prompt after a file was created in a bound repository        {prompt:8.1f} ms   "
                  f"({started} of {options.runs + 1} prompts started projector)")
    print(f"(median of {options.runs} runs each)")


if __name__ == "__main__":
    main()
