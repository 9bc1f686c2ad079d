"""The speed guard: the hot paths' instructions (callgrind) against their budgets in
bench/budgets.json. `make test` runs it, so CI does.

    .venv/bin/python bench/guard.py [--jobs N] [--python PATH]

What is counted, each with PYTHONHASHSEED=0 in a temporary HOME of its own, set up as the benches
set it up (sync_bench, bridge_bench, dispatch_bench):
- a command's start (sync with nothing to change, sync after a model edit, status, --help, the
  bridge's spawn → initialize proxied with its model cache kept and with no KB, the hook
  dispatcher in a folder with no hook): its instructions above `python -c pass` on the same
  interpreter, so that the figure is projector's own work and 10% of it is 10% of what projector
  does, not of the interpreter's start;
- a proxied `tools/call`: one session of 110 calls less one of 10, over 100 (the bridge's own
  instructions; the upstream is a stdlib server in its own process, not counted).
Callgrind counts what runs, not how long: the figures do not move with the machine's load, and
a clean clone in another folder measures within a fraction of a percent.

It prints figure, budget and their ratio for each path, and exits 1 when one is more than 10%
over its budget (2 when it could not measure). A change that must cost more raises that budget
in bench/budgets.json in the same commit, with its reason. Without valgrind it says so and
passes, except under CI=true (.ci/run installs valgrind). ``--jobs`` (default 2) runs the
independent set-ups side by side: the counts do not depend on it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from measure import Case, callgrind, collected, instructions, interpreter  # noqa: E402

BUDGETS = BENCH / "budgets.json"
TOLERANCE = 0.10
PER_CALL = "bridge: a proxied tools/call"
CALLS = (10, 110)  # two sessions: the difference over the calls between them is one call's cost


def sync_paths(projector: str, root: Path) -> dict[str, int]:
    """The commands a prompt and a person run (sync_bench's cases); `python -c pass` among them."""
    from sync_bench import cases_for

    wanted = {"python -c pass": "python -c pass", "sync, nothing to change": "sync, nothing to change",
              "sync after a model edit": "sync after a model edit", "status": "status", "--help": "--help",
              "mcp, empty KB set": "bridge: spawn → initialize, no KB"}
    cases = {case.label: case for case in cases_for(projector, root)}
    for label in wanted:  # once first: caches filled, .pyc files written, each case as it always is
        warm(cases[label])
    return {name: counted(cases[label]) for label, name in wanted.items()}


def bridge_paths(projector: str, root: Path) -> dict[str, int]:
    """The bridge's proxied start with its model cache kept, and one proxied call (bridge_bench's layout)."""
    from bridge_bench import INIT, INITIALIZED, Stdio, Upstream, call, layout

    upstream = Upstream("stdlib", root)
    try:
        bridge, env, _, _ = layout(root, upstream.url, interpreter(projector), projector, f"{Path(projector).parent}:/usr/bin:/bin")
        env = dict(env, LANG="C.UTF-8", PYTHONHASHSEED="0")
        start = Case("bridge start", bridge, env, stdin=(json.dumps(INIT) + "\n").encode(), cwd=str(root / "bound"))
        warm(start)  # the model cache
        found = {"bridge: spawn → initialize, proxied": counted(start)}

        def session(calls: int) -> int:
            log = root / f"callgrind-{calls}.log"
            stdio = Stdio(callgrind(log) + bridge, root / "bound", env)
            stdio.ask(INIT)
            stdio.tell(INITIALIZED)
            for n in range(calls):
                if "result" not in stdio.ask(call(n + 1)):
                    raise RuntimeError("a proxied call failed")
            stdio.close()
            return must(collected(log.read_bytes()), "a bridge session")

        few, many = (session(calls) for calls in CALLS)
        found[PER_CALL] = (many - few) // (CALLS[1] - CALLS[0])
        return found
    finally:
        upstream.stop()


def dispatch_paths(projector: str, root: Path) -> dict[str, int]:
    """The hook dispatcher in a folder with no hook (dispatch_bench's model)."""
    from dispatch_bench import PAYLOAD, setup

    dispatch, env, _, plain = setup(root, projector)
    case = Case("dispatch", dispatch, env, stdin=json.dumps({**PAYLOAD, "cwd": str(plain)}).encode())
    warm(case)  # the table of hooks
    return {"hook dispatch, no hook for the folder": counted(case)}


def warm(case: Case) -> None:
    if case.before:
        case.before()
    subprocess.run(case.command, env=case.env, input=case.stdin, cwd=case.cwd, capture_output=True, check=True)


def counted(case: Case) -> int:
    return must(instructions(case), case.label)


def must(count: int | None, what: str) -> int:
    if count is None:
        raise RuntimeError(f"callgrind counted nothing for {what}")
    return count


LAUNCHER = "#!{python}\nimport sys\nfrom projector.entry import main\nif __name__ == '__main__':\n    sys.exit(main())\n"
"""The console script as pip writes it today: the guard runs its own, so that what an older pip
writes (``import re``: +18 M instructions at every start) does not count."""


def launcher(folder: Path, python: str) -> str:
    """A `projector` console script for ``python`` in ``folder`` (which the commands find on PATH)."""
    folder.mkdir()
    script = folder / "projector"
    script.write_text(LAUNCHER.format(python=python))
    script.chmod(0o755)
    return str(script)


def measure(python: str, jobs: int) -> dict[str, int]:
    """Every path's figure: instructions above `python -c pass`, or per call."""
    groups: list[Callable[[str, Path], dict[str, int]]] = [sync_paths, bridge_paths, dispatch_paths]
    with tempfile.TemporaryDirectory(prefix="projector-guard-") as tmp:
        projector = launcher(Path(tmp) / "bin", python)
        folders = [Path(tmp) / str(n) for n in range(len(groups))]
        for folder in folders:
            folder.mkdir()
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = list(pool.map(lambda pair: pair[0](projector, pair[1]), zip(groups, folders)))
    found = {name: count for result in results for name, count in result.items()}
    floor = found.pop("python -c pass")
    return {"python -c pass": floor, **{name: count if name == PER_CALL else count - floor for name, count in found.items()}}


def verdicts(figures: dict[str, int], budgets: dict[str, dict]) -> tuple[list[tuple[str, int, int | None, str]], bool]:
    """(path, figure, budget, what it says) per path, and whether every one is within its budget."""
    rows, within = [], True
    for name, figure in figures.items():
        if name == "python -c pass":
            continue
        budget = budgets.get(name, {}).get("instructions")
        if budget is None:
            rows.append((name, figure, None, "NO BUDGET: add it to bench/budgets.json"))
            within = False
        elif figure > budget * (1 + TOLERANCE):
            rows.append((name, figure, budget, f"OVER by {figure / budget - 1:.1%}: find the cost, or raise the budget with its reason"))
            within = False
        elif figure < budget * (1 - TOLERANCE):
            rows.append((name, figure, budget, f"ok, {1 - figure / budget:.0%} under: lower the budget to keep the gain"))
        else:
            rows.append((name, figure, budget, "ok"))
    for name in budgets:
        if name not in figures:
            rows.append((name, 0, budgets[name]["instructions"], "NOT MEASURED: the guard lost this path"))
            within = False
    return rows, within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="set-ups measured side by side (default 2)")
    parser.add_argument("--python", default=sys.executable, help="the Python whose projector is measured (default: this one)")
    options = parser.parse_args()
    if shutil.which("valgrind") is None:
        if os.environ.get("CI") == "true":
            print("speed guard: valgrind is not installed (.ci/run installs it: apt-get install valgrind)", file=sys.stderr)
            sys.exit(2)
        print("speed guard: skipped, valgrind is not installed (apt-get install valgrind)")
        return
    spec = json.loads(BUDGETS.read_text(encoding="utf-8"))
    try:
        figures = measure(options.python, options.jobs)
    except (RuntimeError, subprocess.CalledProcessError) as failure:
        print(f"speed guard: could not measure: {failure}", file=sys.stderr)
        sys.exit(2)
    rows, within = verdicts(figures, spec["budgets"])
    print(f"speed guard: instructions above `python -c pass` ({figures['python -c pass'] / 1e6:.1f} M; Python "
          f"{sys.version.split()[0]}, budgets set on {spec['python']}), callgrind; at most {TOLERANCE:.0%} over bench/budgets.json")
    width = max(len(name) for name, *_ in rows)
    print(f"{'path':{width}}  {'figure':>10}  {'budget':>10}  {'ratio':>6}")
    for name, figure, budget, said in rows:
        shown = (lambda n: f"{n / 1e3:8.1f} k") if name == PER_CALL else (lambda n: f"{n / 1e6:8.2f} M")  # noqa: E731
        ratio = f"{figure / budget:6.3f}" if budget else "     -"
        print(f"{name:{width}}  {shown(figure):>10}  {shown(budget) if budget else '-':>10}  {ratio}  {said}")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
