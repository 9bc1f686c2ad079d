"""`projector diff` with drift in one client's file, against `diff` with none and `python -c pass`.

    .venv/bin/python bench/diff_bench.py [--runs N] [--source TREE ...] [--callgrind]

The model is sync_bench's typical one (6 clients, 5 providers, 20 bindings), synced into a
temporary HOME; then one entry of Codex's file is edited by hand (drift: `diff` shows it as
`sync --force` would write it). ``--source`` (repeatable) runs another source tree of projector
(e.g. ``git worktree``'s or ``git archive``'s copy of main) in the same rounds, with this venv's
Python; ``--callgrind`` adds the instructions each case executes. The real HOME is never touched.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import Case, instructions, load, median_ms, ratio, rounds, table  # noqa: E402
from sync_bench import typical  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def cases_for(source: Path, root: Path) -> list[Case]:
    home = root / "home"
    home.mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "bin" / "projector").write_text("#!/bin/sh\n")  # bridge entries name projector on PATH
    (root / "bin" / "projector").chmod(0o755)
    env = {"HOME": str(home), "PATH": f"{root / 'bin'}:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONPATH": str(source / "src"),
           "NO_COLOR": "1"}
    model = root / "projector.yaml"
    model.write_text(typical(home, "[a]"))
    run = [sys.executable, "-m", "projector"]
    subprocess.run(run + ["sync", "--quiet", "--config", str(model)], env=env, check=True, stdout=subprocess.DEVNULL)
    clean = root / "clean-home"
    subprocess.run(["cp", "-a", str(home), str(clean)], check=True)
    codex = home / ".codex" / "config.toml"
    codex.write_text(codex.read_text().replace("kbs=a", "kbs=mine", 1))
    assert "kbs=mine" in codex.read_text(), "the bench's hand edit found nothing to edit"
    return [
        Case("python -c pass", [sys.executable, "-c", "pass"], env),
        Case("diff, no drift", run + ["diff", "--no-pager", "--config", str(model)], dict(env, HOME=str(clean))),
        Case("diff, drift in 1 of 6 files", run + ["diff", "--no-pager", "--config", str(model)], env),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--source", action="append", type=Path, help="a projector source tree (repeatable; default: this one)")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions (valgrind)")
    options = parser.parse_args()
    sources = options.source or [ROOT]
    with tempfile.TemporaryDirectory() as tmp:
        sets = [cases_for(source.resolve(), Path(tmp) / str(n)) for n, source in enumerate(sources)]
        print(load())
        rounds([case for cases in sets for case in cases], options.runs)
        print(f"{load()} (after; median of {options.runs} interleaved rounds)")
        for n, source in enumerate(sources):
            print(f"  [{n + 1}] {source}")
        heads = [f"[{n + 1}] {kind} ms  ×pass" for n in range(len(sets)) for kind in ("wall", "cpu")]
        rows = [(label, [f"{median_ms(cases[index], cpu):7.1f} {ratio(cases[index], cases[0], cpu):6.2f}x"
                         for cases in sets for cpu in (False, True)])
                for index, label in enumerate(case.label for case in sets[0])]
        table(rows, heads)
        if options.callgrind:
            print("\ninstructions (callgrind Ir, millions; ratio to python -c pass)")
            counts = [[instructions(case) for case in cases] for cases in sets]
            rows = [(label, [f"{c[index] / 1e6:8.1f}  {c[index] / c[0]:6.2f}x" if c[index] and c[0] else "n/a" for c in counts])
                    for index, label in enumerate(case.label for case in sets[0])]
            table(rows, [f"[{n + 1}] M instr  ×pass" for n in range(len(sets))])


if __name__ == "__main__":
    main()
