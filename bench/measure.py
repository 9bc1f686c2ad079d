"""What the benches share: commands timed in interleaved rounds against `python -c pass`, and
the measures that do not depend on the machine's load (instructions counted by callgrind, the
modules a command imports).

The machine these run on is often shared: every round times each case once, so a burst of load
hits all of them alike, and a case's ratio is the median of its per-round ratios to the baseline
of the same round. Besides the wall clock, each run's own CPU time (user + system, from wait4)
is kept: a process waiting for a core does not count there, so it moves less with the load. Each projector given (``--projector``, repeatable: e.g. an installed copy of
main beside this tree) is measured in the same rounds, in its own temporary HOME.
"""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Case:
    """One command to time; ``before`` runs untimed ahead of each run (an edit, a clean-up)."""

    label: str
    command: list[str]
    env: dict[str, str]
    before: Callable[[], None] | None = None
    stdin: bytes | None = None
    cwd: str | None = None
    times: list[float] = field(default_factory=list)  # wall clock, seconds
    cpu: list[float] = field(default_factory=list)  # the process's own user + system time

    def run(self) -> tuple[float, float]:
        if self.before:
            self.before()
        start = time.perf_counter()
        process = subprocess.Popen(self.command, env=self.env, cwd=self.cwd, stdin=subprocess.PIPE if self.stdin is not None else None,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if self.stdin is not None:
            process.stdin.write(self.stdin)
            process.stdin.close()
        _, _, usage = os.wait4(process.pid, 0)
        process.returncode = 0  # reaped above
        return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def interpreter(projector: str) -> str:
    """The Python a console script runs with: its shebang, through ``env``, or the ``exec``
    line of pip's ``/bin/sh`` launcher (written for long paths and paths with spaces)."""
    import shlex

    lines = Path(projector).read_text(encoding="utf-8", errors="replace").splitlines()[:3]
    if not lines or not lines[0].startswith("#!"):
        return sys.executable
    words = lines[0][2:].split()
    if words and words[0].endswith("/env") and len(words) > 1:
        return shutil.which(words[1]) or sys.executable
    if words and words[0].endswith("/sh"):
        launcher = next((line for line in lines[1:] if line.startswith(LAUNCHER)), None)
        return shlex.split(launcher[len(LAUNCHER):])[0] if launcher else sys.executable
    return lines[0][2:].strip()


LAUNCHER = "'''exec' "  # how pip's /bin/sh launcher's second line starts


def rounds(cases: list[Case], runs: int) -> None:
    """Every case once per round, ``runs`` rounds (after one warm-up round)."""
    for case in cases:
        case.run()
    for _ in range(runs):
        for case in cases:
            wall, cpu = case.run()
            case.times.append(wall)
            case.cpu.append(cpu)


def median_ms(case: Case, cpu: bool = False) -> float:
    return statistics.median(case.cpu if cpu else case.times) * 1000


def ratio(case: Case, baseline: Case, cpu: bool = False) -> float:
    """The median of the per-round ratios: robust to load that comes and goes between rounds."""
    pairs = zip(case.cpu, baseline.cpu) if cpu else zip(case.times, baseline.times)
    return statistics.median(t / b for t, b in pairs if b > 0)


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def instructions(case: Case) -> int | None:
    """Instructions the command executes (callgrind's Ir), with a fixed hash seed: unlike wall
    time, the same on a loaded and a quiet machine."""
    if shutil.which("valgrind") is None:
        return None
    if case.before:
        case.before()
    env = dict(case.env, PYTHONHASHSEED="0")
    done = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *case.command], env=env,
                          input=case.stdin, cwd=case.cwd, capture_output=True, check=False)
    return collected(done.stderr)


def callgrind(log: Path) -> list[str]:
    """The words that run a command under callgrind, its own messages (the count) written to
    ``log``, for a command whose output a bench reads itself (run it with PYTHONHASHSEED=0)."""
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", f"--log-file={log}"]


def collected(messages: bytes) -> int | None:
    """The instructions callgrind counted, from its messages (stderr, or the log file)."""
    found = re.search(rb"Collected : (\d+)", messages)
    return int(found.group(1)) if found else None


_PROBED = {"sitecustomize", "usercustomize", "org"}  # looked for at start-up or by `copy`, not there


@dataclass(frozen=True)
class Imports:
    modules: tuple[str, ...]  # in import order
    self_us: int  # the sum of every module's own import time (-X importtime)

    def packages(self) -> list[str]:
        """Top-level names outside the standard library, and projector's own modules."""
        found: dict[str, None] = {}
        for name in self.modules:
            top = name.split(".")[0]
            if top == "projector":
                found[name] = None
            elif top not in sys.stdlib_module_names and top not in _PROBED and not top.startswith("_"):
                found[top] = None
        return list(found)


def imports(case: Case) -> Imports:
    """The modules a command imports (`python -X importtime`), in order."""
    if case.before:
        case.before()
    python, *rest = case.command
    done = subprocess.run([python, "-X", "importtime", *rest], env=case.env, input=case.stdin, cwd=case.cwd,
                          capture_output=True, check=False)
    modules, total = [], 0
    for line in done.stderr.decode(errors="replace").splitlines():
        parts = line.split("|")
        if line.startswith("import time:") and len(parts) == 3 and parts[0].split(":")[1].strip().isdigit():
            total += int(parts[0].split(":")[1])
            modules.append(parts[2].strip())
    return Imports(tuple(modules), total)


def table(rows: list[tuple[str, list[str]]], heads: list[str]) -> None:
    width = max(len(label) for label, _ in rows + [("", [])])
    print(f"{'':{width}}  " + "  ".join(f"{h:>18}" for h in heads))
    for label, cells in rows:
        print(f"{label:{width}}  " + "  ".join(f"{c:>18}" for c in cells))
