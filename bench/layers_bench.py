"""What a model in layers costs the hot paths, against `python3 -c pass` in the same run.

    .venv/bin/python bench/layers_bench.py [--runs N] [--compare OTHER_PROJECTOR]

One model, written once as a single file (1 layer) and once as four included files plus the
personal one (5 layers: team providers, team bindings, a second team's provider, a local
server's layer, the personal file), merging to the same providers and bindings. For each:
`projector sync` with nothing to change (the fast path: a stat of every watched file, every
layer among them) and a bridge start (`projector mcp --no-kb` to its answer to `initialize`: the
checked model read from the cache, every layer's text read again to see it unchanged). Rounds
are interleaved (each command once per round) so a busy machine slows all alike; medians.
``--compare`` times the 1-layer model under another installed projector (e.g. main's) too.
``--instructions`` also counts each command's instructions once under valgrind's callgrind (the
same on a busy machine: figures to compare when wall-clock medians are noise). Everything runs
in temporary HOMEs; the real one is not touched.
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

PROVIDERS = {
    "docs": "    url: https://kb.example.com/mcp\n    token_env: DOCS_TOKEN\n    kbs: [handbook, api, web]\n    default: [handbook]\n",
    "tickets": "    url: https://tickets.example.com/mcp\n    token_env: TICKETS_TOKEN\n",
    "wiki": "    url: https://wiki.example.com/mcp\n",
    "lint": "    command: lint-mcp\n    args: [--stdio]\n    enabled: false\n",
}
BINDINGS = "".join(f"  ~/src/repo-{n}:\n    docs: [api]\n" for n in range(20))


def _providers(*names: str) -> str:
    return "providers:\n" + "".join(f"  {name}:\n{PROVIDERS[name]}" for name in names)


def write_models(folder: Path) -> tuple[Path, Path]:
    """(the 1-layer model, the 5-layer model) of the same content."""
    folder.mkdir(parents=True)
    single = folder / "single.yaml"
    single.write_text("version: 1\nclients: [claude-code, codex]\n" + _providers("docs", "tickets", "wiki", "lint") + "bindings:\n" + BINDINGS)
    team = folder / "team"
    team.mkdir()
    (team / "providers.yaml").write_text("version: 1\n" + _providers("docs", "tickets"))
    (team / "bindings.yaml").write_text("version: 1\nbindings:\n" + BINDINGS)
    (team / "other-team.yaml").write_text("version: 1\n" + _providers("wiki"))
    (team / "local.yaml").write_text("version: 1\n" + _providers("lint"))
    layered = folder / "layered.yaml"
    layered.write_text("version: 1\ninclude: [team/providers.yaml, team/bindings.yaml, team/other-team.yaml, team/local.yaml]\n"
                       "clients: [claude-code, codex]\n")
    return single, layered


def environment(root: Path, binary: str) -> dict[str, str]:
    home = root / "home"
    home.mkdir(parents=True)
    return {"HOME": str(home), "XDG_STATE_HOME": str(home / ".local/state"), "XDG_CONFIG_HOME": str(home / ".config"),
            "PATH": f"{Path(binary).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}


def timed_run(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return (time.perf_counter() - start) * 1000


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}}) + "\n"


def timed_bridge(command: list[str], env: dict[str, str], cwd: str) -> float:
    """Spawn to the answer to ``initialize``."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(INITIALIZE.encode())
    process.stdin.flush()
    line = process.stdout.readline()
    elapsed = (time.perf_counter() - start) * 1000
    process.stdin.close()
    process.wait(timeout=30)
    if b'"result"' not in line:
        raise SystemExit(f"the bridge did not answer initialize: {line!r}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--compare", help="another projector executable: time the 1-layer model under it too")
    parser.add_argument("--instructions", action="store_true", help="also count instructions with valgrind (callgrind)")
    options = parser.parse_args()
    binary = shutil.which("projector") or str(Path(sys.executable).parent / "projector")
    with tempfile.TemporaryDirectory() as tmp:
        single, layered = write_models(Path(tmp) / "models")
        commands: dict[str, tuple[str, list[str], dict[str, str]]] = {}
        runners = [("this", binary)] + ([("compare", options.compare)] if options.compare else [])
        for label, executable in runners:
            for name, config in (("1 layer", single), ("5 layers", layered)):
                if label == "compare" and config is layered:
                    continue
                env = environment(Path(tmp) / f"{label}-{name.replace(' ', '-')}", executable)
                for layer in sorted(config.parent.glob("team/*.yaml")) if config is layered else ():  # trusted: the same providers as 1 layer
                    subprocess.run([executable, "trust", str(layer), "--config", str(config)], env=env, check=True, stdout=subprocess.DEVNULL)
                sync = [executable, "sync", "--quiet", "--config", str(config)]
                subprocess.run(sync, env=env, check=True)  # the full sync that records the fingerprint
                bridge = [executable, "mcp", "--provider", "docs", "--no-kb", "--config", str(config)]
                timed_bridge(bridge, env, env["HOME"])  # the model cache is written
                tag = "" if label == "this" else " (--compare)"
                commands[f"sync, nothing to change, {name}{tag}"] = ("run", sync, env)
                commands[f"bridge start, {name}{tag}"] = ("bridge", bridge, env)
        baseline_env = dict(os.environ)
        times: dict[str, list[float]] = {"python3 -c pass": []} | {name: [] for name in commands}
        for _ in range(options.runs):
            times["python3 -c pass"].append(timed_run([sys.executable, "-c", "pass"], baseline_env))
            for name, (kind, command, env) in commands.items():
                times[name].append(timed_run(command, env) if kind == "run" else timed_bridge(command, env, env["HOME"]))
        counted = _instructions(commands) if options.instructions else {}
    base = statistics.median(times["python3 -c pass"])
    for name, values in times.items():
        value = statistics.median(values)
        print(f"{name:44s} {value:8.1f} ms   {value / base:5.2f}x python3 -c pass")
    for kind in ("sync, nothing to change", "bridge start"):
        one, five = statistics.median(times[f"{kind}, 1 layer"]), statistics.median(times[f"{kind}, 5 layers"])
        print(f"{kind}: 5 layers / 1 layer = {five / one:.3f} ({five - one:+.1f} ms)")
    print(f"(median of {options.runs} interleaved rounds; load average {os.getloadavg()[0]:.1f})")
    for name, count in counted.items():
        print(f"{name:44s} {count / 1e6:8.2f} M instructions   {count / counted['python3 -c pass']:5.2f}x")


def _instructions(commands: dict[str, tuple[str, list[str], dict[str, str]]]) -> dict[str, int]:
    """Each command's instructions, counted once by callgrind (the script run by its own interpreter)."""
    import re

    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind")
    counted: dict[str, int] = {}
    everything = {"python3 -c pass": ("run", [sys.executable, "-c", "pass"], dict(os.environ))} | commands
    for name, (kind, command, env) in everything.items():
        script = Path(command[0])
        interpreter = script.read_text(errors="replace").partition("\n")[0][2:].strip() if script.suffix != ".py" and script.name != Path(sys.executable).name else None
        full = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *([interpreter] if interpreter else []), *command]
        done = subprocess.run(full, env={**env, "PYTHONHASHSEED": "0"}, cwd=env.get("HOME"), capture_output=True, text=True,
                              input=INITIALIZE if kind == "bridge" else None, timeout=600)
        found = re.search(r"Collected : (\d+)", done.stderr)
        if found is None:
            raise SystemExit(f"callgrind counted nothing for {name}: {done.stderr[-500:]}")
        counted[name] = int(found.group(1))
    return counted


if __name__ == "__main__":
    main()
