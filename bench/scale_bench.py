"""A full `projector sync` at scale, and the no-change paths, against `python3 -c pass`.

    .venv/bin/python bench/scale_bench.py [--runs N]

- a full sync of 6 clients × 50 providers × 1,000 bindings into a fresh HOME (target ≤ 0.5 s),
  and of 10× that (500 providers × 10,000 bindings): the cost should grow about linearly;
- `projector sync` with nothing to change (the fast path; target median ≤ 2× `python3 -c pass`);
- the shell hook with nothing to change: processes started (counted with strace, target 0) and
  time per prompt.
Everything runs in temporary HOMEs; the real one is not touched.
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

BIN = Path(sys.executable).parent


def model(providers: int, bindings: int, home: Path) -> str:
    lines = ["version: 1", "clients: [claude-code, codex, opencode, crush, kiro, copilot]", "providers:"]
    for p in range(providers):
        lines += [f"  p{p}:", f"    url: https://kb{p}.example.com/mcp", f"    token_env: TOKEN_{p}", "    kbs: [a, b, c]"]
    lines.append("bindings:")
    for b in range(bindings):
        lines += [f"  {home}/work/w{b}:", f"    p{b % providers}: [a, b]", f"    p{(b * 7 + 1) % providers}: [c]"]
    return "\n".join(lines) + "\n"


def timed(command: list[str], env: dict, before=None) -> float:
    if before:
        before()
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def median_ms(command: list[str], env: dict, runs: int, before=None) -> float:
    timed(command, env, before)
    return statistics.median(timed(command, env, before) for _ in range(runs)) * 1000


def sandbox(root: Path) -> dict:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": f"{BIN}:/usr/bin:/bin", "LANG": "C.UTF-8"}


def full_sync(root: Path, providers: int, bindings: int, runs: int, warm: bool = False) -> float:
    """A sync that writes every client's file anew. Cold: nothing cached (the model and the
    client descriptors are checked); warm: their checked copies are there (the model unchanged)."""
    env = sandbox(root)
    config = root / "projector.yaml"
    config.write_text(model(providers, bindings, Path(env["HOME"])))
    command = [str(BIN / "projector"), "sync", "--quiet", "--config", str(config)]

    def fresh() -> None:
        for name in (".claude.json", ".codex", ".config", ".kiro", ".copilot"):
            target = Path(env["HOME"]) / name
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
        state = Path(env["HOME"]) / ".local" / "state" / "projector"
        shutil.rmtree(state / "models", ignore_errors=True)  # the fast path's fingerprints
        for name in ("ledger.json",) + (() if warm else ("model-cache.json", "clients-cache.json")):
            (state / name).unlink(missing_ok=True)

    return median_ms(command, env, runs, fresh)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        baseline = median_ms([sys.executable, "-c", "pass"], sandbox(root / "b"), runs * 3)
        print(f"python3 -c pass                                 {baseline:8.1f} ms   1.00x")
        small = full_sync(root / "s", 50, 1000, runs)
        print(f"full sync, 6 clients x 50 providers x 1,000 b.  {small:8.1f} ms   cold (target ≤ 500 ms)")
        warm = full_sync(root / "w", 50, 1000, runs, warm=True)
        print(f"  the same, model and descriptors checked before{warm:8.1f} ms   warm")
        large = full_sync(root / "l", 500, 10000, max(3, runs // 2))
        print(f"full sync, 6 clients x 500 providers x 10,000 b.{large:8.1f} ms   {large / small:5.2f}x the small one (10x the size)")

        env = sandbox(root / "n")
        config = root / "n" / "projector.yaml"
        config.write_text(model(50, 1000, Path(env["HOME"])))
        command = [str(BIN / "projector"), "sync", "--quiet", "--config", str(config)]
        subprocess.run(command, env=env, check=True)
        noop = median_ms(command, env, runs * 3)
        print(f"sync with nothing to change (fast path)         {noop:8.1f} ms   {noop / baseline:5.2f}x   (target ≤ 2x)")

        hook_bench(root / "n", env, config)


def hook_bench(root: Path, env: dict, config: Path) -> None:
    """The bash hook at 200 prompts with nothing changed: processes counted by strace."""
    if shutil.which("strace") is None or shutil.which("bash") is None:
        print("hook: strace or bash missing (apt-get install strace); not measured")
        return
    env = dict(env, PROJECTOR_CONFIG=str(config))
    subprocess.run([str(BIN / "projector"), "sync", "--quiet", "--hook"], env=env, check=True)
    hook = subprocess.run([str(BIN / "projector"), "hook", "bash"], env=env, check=True, capture_output=True, text=True).stdout
    (root / "hook.sh").write_text(hook)
    prompts = 200
    script = f'source {root}/hook.sh; t0=$EPOCHREALTIME; for i in $(seq {prompts}); do _projector_hook; done; t1=$EPOCHREALTIME; echo "$t0 $t1" > {root}/hook-time'
    trace = root / "trace"
    # Everything bash starts: `seq` once for the loop, and whatever the hook would add.
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", str(trace), "bash", "--norc", "-c", script],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    baseline_script = f"t=$EPOCHREALTIME; for i in $(seq {prompts}); do :; done"
    base_trace = root / "trace-base"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=execve,clone,clone3,fork,vfork", "-o", str(base_trace), "bash", "--norc", "-c", baseline_script],
                   env=env, check=True, stdout=subprocess.DEVNULL)
    count = lambda path: sum(1 for line in path.read_text().splitlines() if "clone" in line or "fork" in line)  # noqa: E731
    started = count(trace) - count(base_trace)
    subprocess.run(["bash", "--norc", "-c", script], env=env, check=True)  # timed without strace
    t0, t1 = map(float, (root / "hook-time").read_text().split())
    from projector.fastpath import hook_folder

    lines = len((Path(hook_folder(env)) / "watch").read_text().splitlines())
    print(f"hook, {prompts} prompts with nothing changed: {started} processes started (strace), "
          f"{(t1 - t0) / prompts * 1000:.2f} ms per prompt ({lines} lines in its watch list)")


if __name__ == "__main__":
    main()
