"""A full `projector sync` at scale, and the no-change paths, against `python3 -c pass`.

    .venv/bin/python bench/scale_bench.py [--runs N] [--projector PATH ...] [--callgrind] [--no-large]

- a full sync of 6 clients × 50 providers × 1,000 bindings into a fresh HOME (target ≤ 0.5 s),
  and of 10× that (500 providers × 10,000 bindings): the cost should grow about linearly;
- `projector sync` with nothing to change (the fast path; target median ≤ 2× `python3 -c pass`);
- the shell hook with nothing to change: processes started (counted with strace, target 0) and
  time per prompt.
Cases are timed in interleaved rounds (bench/measure.py); ``--projector`` (repeatable) measures
other installed copies in the same rounds, ``--callgrind`` counts instructions. Everything runs in
temporary HOMEs; the real one is not touched.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Case, instructions, interpreter, load, median_ms, ratio, rounds, table  # noqa: E402

BIN = Path(sys.executable).parent


def model(providers: int, bindings: int, home: Path) -> str:
    lines = ["version: 1", "clients: [claude-code, codex, opencode, crush, kiro, copilot]", "providers:"]
    for p in range(providers):
        lines += [f"  p{p}:", f"    url: https://kb{p}.example.com/mcp", f"    token_env: TOKEN_{p}", "    kbs: [a, b, c]"]
    lines.append("bindings:")
    for b in range(bindings):
        lines += [f"  {home}/work/w{b}:", f"    p{b % providers}: [a, b]", f"    p{(b * 7 + 1) % providers}: [c]"]
    return "\n".join(lines) + "\n"


def sandbox(root: Path, projector: str) -> dict:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    return {"HOME": str(home), "PATH": f"{Path(projector).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}


def full_sync(root: Path, projector: str, providers: int, bindings: int, label: str, warm: bool = False) -> Case:
    """A sync that writes every client's file anew. Cold: nothing cached (the model and the
    client descriptors are checked); warm: their checked copies are there (the model unchanged)."""
    env = sandbox(root, projector)
    config = root / "projector.yaml"
    config.write_text(model(providers, bindings, Path(env["HOME"])))
    command = [interpreter(projector), projector, "sync", "--quiet", "--config", str(config)]
    home = Path(env["HOME"])

    def fresh() -> None:
        for name in (".claude.json", ".codex", ".config", ".kiro", ".copilot"):
            target = home / name
            shutil.rmtree(target, ignore_errors=True) if target.is_dir() else target.unlink(missing_ok=True)
        state = home / ".local" / "state" / "projector"
        shutil.rmtree(state / "models", ignore_errors=True)  # the fast path's fingerprints
        for name in ("ledger.json",) + (() if warm else ("model-cache.json", "clients-cache.json")):
            (state / name).unlink(missing_ok=True)

    return Case(label, command, env, before=fresh)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--projector", action="append", help="a projector console script (repeatable)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind; slow)")
    parser.add_argument("--no-large", action="store_true", help="skip the 10x model")
    options = parser.parse_args()
    runs = options.runs
    projectors = options.projector or [str(BIN / "projector")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(load())
        sets = []
        for n, projector in enumerate(projectors):
            at = root / str(n)
            sets.append([
                Case("python -c pass", [interpreter(projector), "-c", "pass"], sandbox(at / "b", projector)),
                full_sync(at / "s", projector, 50, 1000, "6 x 50 x 1,000, cold (≤ 500 ms)"),
                full_sync(at / "w", projector, 50, 1000, "6 x 50 x 1,000, warm (≤ 300 ms)", warm=True),
                noop_case(at / "n", projector),
            ])
        rounds([case for cases in sets for case in cases], runs)
        large = []
        if not options.no_large:
            for n, projector in enumerate(projectors):
                large.append([sets[n][0], full_sync(root / str(n) / "l", projector, 500, 10000, "6 x 500 x 10,000, cold")])
            rounds([case for cases in large for case in cases], max(3, runs // 2))
        print(f"{load()} (after; medians of {runs} interleaved rounds, {max(3, runs // 2)} for the large model)")
        for n, projector in enumerate(projectors):
            print(f"  [{n + 1}] {projector}")
        heads = [f"[{n + 1}] {kind} ms  ×pass" for n in range(len(sets)) for kind in ("wall", "cpu")]
        rows = []
        for index in range(len(sets[0])):
            label = sets[0][index].label
            rows.append((label, [f"{median_ms(cases[index], cpu):7.1f} {ratio(cases[index], cases[0], cpu):6.2f}x" for cases in sets for cpu in (False, True)]))
        if large:
            rows.append(("6 x 500 x 10,000, cold (10x the size)",
                         [f"{median_ms(pair[1], cpu):7.1f} {median_ms(pair[1], cpu) / median_ms(cases[1], cpu):5.2f}x sm" for pair, cases in zip(large, sets)
                          for cpu in (False, True)]))
        table(rows, heads)
        if options.callgrind:
            print("\ninstructions (callgrind Ir, millions; ratio to python -c pass)")
            counts = [[instructions(case) for case in cases] for cases in sets]
            table([(sets[0][i].label, [f"{c[i] / 1e6:8.1f}  {c[i] / c[0]:6.2f}x" if c[i] and c[0] else "n/a" for c in counts])
                   for i in range(len(sets[0]))], [f"[{n + 1}] M instr  ×pass" for n in range(len(sets))])
        for n, projector in enumerate(projectors):
            hook_bench(root / str(n) / "n", sets[n][3].env, root / str(n) / "n" / "projector.yaml", projector)


def noop_case(root: Path, projector: str) -> Case:
    env = sandbox(root, projector)
    config = root / "projector.yaml"
    config.write_text(model(50, 1000, Path(env["HOME"])))
    command = [interpreter(projector), projector, "sync", "--quiet", "--config", str(config)]
    subprocess.run(command, env=env, check=True)
    return Case("sync with nothing to change (≤ 2x)", command, env)


def hook_bench(root: Path, env: dict, config: Path, projector: str) -> None:
    """The bash hook at 200 prompts with nothing changed: processes counted by strace."""
    if shutil.which("strace") is None or shutil.which("bash") is None:
        print("hook: strace or bash missing (apt-get install strace); not measured")
        return
    env = dict(env, PROJECTOR_CONFIG=str(config))
    subprocess.run([projector, "sync", "--quiet", "--hook"], env=env, check=True)
    hook = subprocess.run([projector, "hook", "bash"], env=env, check=True, capture_output=True, text=True).stdout
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
    from projector.core.fingerprint import hook_folder

    watch = Path(hook_folder(env)) / "watch"
    if not watch.exists():  # projector 0.2.0 kept one list for every model
        watch = Path(env["HOME"]) / ".local" / "state" / "projector" / "hook-watch"
    lines = len(watch.read_text().splitlines())
    print(f"{projector}: hook, {prompts} prompts with nothing changed: {started} processes started (strace), "
          f"{(t1 - t0) / prompts * 1000:.2f} ms per prompt ({lines} lines in its watch list)")


if __name__ == "__main__":
    main()
