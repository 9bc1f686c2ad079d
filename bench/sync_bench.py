"""The commands a prompt and a person run, against `python -c pass` measured in the same run.

    .venv/bin/python bench/sync_bench.py [--runs N] [--projector PATH ...] [--callgrind] [--imports]

Cases (a typical model: 6 clients, 5 providers, 20 bindings, in a temporary HOME):
- `sync` after an edit of the model that changes every client's entry (target ≤ 8×);
- `sync` with nothing to change: the shell hook's path (target ≤ 2×);
- `status` (target ≤ 10×) and `--help` (target ≤ 8×);
- `sync` of examples/projector.yaml into a fresh HOME (6 files created);
- `mcp` in a folder bound to no KB (answered locally; bench/bridge_bench.py measures the bridge).

``--projector`` (repeatable) measures other installed copies in the same rounds, e.g. main's:
``python -m venv /tmp/main && /tmp/main/bin/pip install <main's tree>``. ``--callgrind`` adds
the instructions each command executes (valgrind; the same on a loaded machine and a quiet one),
``--imports`` the third-party packages and projector modules each one imports.
The real HOME is never touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Case, imports, instructions, interpreter, load, median_ms, ratio, rounds, table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "projector.yaml"
CLIENTS = "[claude-code, codex, opencode, crush, kiro, copilot]"
TARGETS = {"sync after a model edit": 8.0, "sync, nothing to change": 2.0, "status": 10.0, "--help": 8.0}


def typical(home: Path, default: str) -> str:
    """6 clients, 5 providers, 20 bindings; p4 is unbound (an HTTP entry with ``default``)."""
    lines = ["version: 1", f"clients: {CLIENTS}", "providers:"]
    for p in range(5):
        lines += [f"  p{p}:", f"    url: https://kb{p}.example.com/mcp", f"    token_env: TOKEN_{p}", "    kbs: [a, b, c]"]
    lines.append(f"    default: {default}")
    lines.append("bindings:")
    for b in range(19):
        lines += [f"  {home}/work/w{b}:", f"    p{b % 4}: [a, b]"]
    lines += [f"  {home}/work/none:", "    p0: []"]
    return "\n".join(lines) + "\n"


def cases_for(projector: str, root: Path) -> list[Case]:
    python = interpreter(projector)
    home = root / "home"
    (home / "work" / "none").mkdir(parents=True)
    env = {"HOME": str(home), "PATH": f"{Path(projector).parent}:/usr/bin:/bin", "LANG": "C.UTF-8"}
    model = root / "projector.yaml"
    edits = [typical(home, "[a]"), typical(home, "[a, b]")]
    model.write_text(edits[0])
    run = [python, projector]
    subprocess_run(run + ["sync", "--quiet", "--config", str(model)], env)

    def edit() -> None:  # every client's entry for p4 changes
        edits.reverse()
        model.write_text(edits[0])

    example_home = root / "example-home"
    example_env = dict(env, HOME=str(example_home))

    def fresh() -> None:
        shutil.rmtree(example_home, ignore_errors=True)
        example_home.mkdir()
        shutil.copy(ROOT / "examples" / "claude.json", example_home / ".claude.json")

    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
    return [
        Case("python -c pass", [python, "-c", "pass"], env),
        Case("sync after a model edit", run + ["sync", "--quiet", "--config", str(model)], env, before=edit),
        Case("sync, nothing to change", run + ["sync", "--quiet", "--config", str(model)], env),
        Case("status", run + ["status", "--config", str(model)], env),
        Case("--help", run + ["--help"], env),
        Case("example: 6 files created", run + ["sync", "--quiet", "--config", str(EXAMPLE)], example_env, before=fresh),
        Case("mcp, empty KB set", run + ["mcp", "--provider", "p0", "--config", str(model)], env,
             stdin=(json.dumps(initialize) + "\n").encode(), cwd=str(home / "work" / "none")),
    ]


def subprocess_run(command: list[str], env: dict[str, str]) -> None:
    import subprocess

    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--projector", action="append", help="a projector console script (repeatable)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    parser.add_argument("--imports", action="store_true", help="also list what each command imports")
    options = parser.parse_args()
    projectors = options.projector or [shutil.which("projector") or str(Path(sys.executable).parent / "projector")]
    with tempfile.TemporaryDirectory() as tmp:
        sets = [cases_for(p, Path(tmp) / str(n)) for n, p in enumerate(projectors)]
        print(load())
        rounds([case for cases in sets for case in cases], options.runs)
        print(f"{load()} (after; median of {options.runs} interleaved rounds)")
        for projector in projectors:
            print(f"  [{projectors.index(projector) + 1}] {projector}")
        heads = [f"[{n + 1}] {kind} ms  ×pass" for n in range(len(sets)) for kind in ("wall", "cpu")]
        rows = []
        for index, label in enumerate(case.label for case in sets[0]):
            cells = [f"{median_ms(cases[index], cpu):7.1f} {ratio(cases[index], cases[0], cpu):6.2f}x" for cases in sets for cpu in (False, True)]
            target = TARGETS.get(label)
            rows.append((label + (f" (≤ {target:g}x)" if target else ""), cells))
        table(rows, heads)
        if options.callgrind:
            print("\ninstructions (callgrind Ir, millions; ratio to python -c pass)")
            rows = []
            counts = [[instructions(case) for case in cases] for cases in sets]
            for index, label in enumerate(case.label for case in sets[0]):
                cells = [f"{c[index] / 1e6:8.1f}  {c[index] / c[0]:6.2f}x" if c[index] and c[0] else "n/a" for c in counts]
                rows.append((label, cells))
            table(rows, [f"[{n + 1}] M instr  ×pass" for n in range(len(sets))])
        if options.imports:
            for n, cases in enumerate(sets):
                print(f"\nimports of [{n + 1}] (modules, sum of own import times, packages)")
                for case in cases[1:]:
                    found = imports(case)
                    print(f"  {case.label}: {len(found.modules)} modules, {found.self_us / 1000:.1f} ms")
                    print("    " + " ".join(found.packages()))


if __name__ == "__main__":
    main()
