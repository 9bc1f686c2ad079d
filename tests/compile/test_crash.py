"""Crash injection: a sync killed with SIGKILL at any moment leaves every client file with its
old bytes or its new ones — parseable, never partial, never empty.

Each run is a child forked from a process that has already imported projector, so the kill
lands in the part of a sync that reads, decides and writes (not in interpreter start-up). Three
in four kills track the write window adaptively (a kill that found nothing written yet makes the
next one later, one that found everything written makes it earlier), the rest are uniform over
the whole sync."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import statistics
import time
import tomllib
from pathlib import Path

import paths
from models import SIX_CLIENTS

from projector import cli
from projector.compile import documents

RUNS = 200
MODEL = SIX_CLIENTS
FIXTURES = paths.FIXTURES / "existing"
PLACES = {
    "claude-code.json": ".claude.json",
    "codex.toml": ".codex/config.toml",
    "opencode.json": ".config/opencode/opencode.json",
    "crush.json": ".config/crush/crush.json",
    "kiro.json": ".kiro/settings/mcp.json",
    "copilot.json": ".copilot/mcp-config.json",
}
FORMATS = {".claude.json": "json", ".codex/config.toml": "toml", ".config/opencode/opencode.json": "jsonc",
           ".config/crush/crush.json": "json", ".kiro/settings/mcp.json": "json", ".copilot/mcp-config.json": "jsonc"}


def _restore(home: Path) -> None:
    shutil.rmtree(home / ".local", ignore_errors=True)
    for fixture, place in PLACES.items():
        target = home / place
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, target)


def _sync_in_child(environ: dict[str, str], config: Path, prepare=None) -> int:
    """``prepare``: run in the child first (to inject a fault)."""
    pid = os.fork()
    if pid == 0:  # the child: a real `projector sync`, then out without pytest's cleanup
        code = 0
        try:
            if prepare is not None:
                prepare()
            os.environ.clear()
            os.environ.update(environ)
            import sys

            sys.argv = ["projector", "sync", "--quiet", "--config", str(config)]
            cli.main()
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        except BaseException:
            code = 3
        os._exit(code)
    return pid


def _warm() -> None:
    """Everything a sync imports lazily, imported (and cached) before the forks."""
    import jinja2  # noqa: F401
    import jsonschema  # noqa: F401
    import ruamel.yaml  # noqa: F401
    import tomlkit  # noqa: F401

    from projector.compile import clients
    from projector.compile.documents import jsonc, toml
    from projector.core.resources import schema

    clients.registry()
    jsonc._parser()
    toml._parser()
    schema("model")


def test_kill_9_at_random_moments_never_leaves_a_partial_file(sandbox):
    _warm()
    config = sandbox.model(MODEL)
    sandbox.install_projector()
    home = sandbox.home
    old = {place: (FIXTURES / fixture).read_text() for fixture, place in PLACES.items()}

    firsts, lasts, ends = [], [], []
    for _ in range(5):  # when an uninterrupted sync writes, counted from the fork
        _restore(home)
        start = time.time()
        _, status = os.waitpid(_sync_in_child(sandbox.env, config), 0)
        ends.append(time.time() - start)
        assert os.waitstatus_to_exitcode(status) == 0
        written = [(home / place).stat().st_mtime_ns / 1e9 - start for place in PLACES.values()]
        firsts.append(min(written))
        lasts.append(max(written))
    new = {place: (home / place).read_text() for place in PLACES.values()}
    assert all(new[p] != old[p] for p in PLACES.values())
    delay = statistics.median(firsts)
    step = max(statistics.median(lasts) - delay, 0.0005)

    rng = random.Random(20261130)
    mixed = untouched = complete = run = 0
    # At least RUNS kills; more (up to twice as many) while too few have landed between writes,
    # which a loaded machine's timing can cause. Every run is checked all the same.
    while run < RUNS or (mixed < RUNS // 20 and run < 2 * RUNS):
        run += 1
        _restore(home)
        pid = _sync_in_child(sandbox.env, config)
        adaptive = run % 4 != 0
        time.sleep(max(0.0, delay + rng.uniform(-step, step)) if adaptive else rng.uniform(0, max(ends)))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        states = set()
        for place, fmt in FORMATS.items():
            text = (home / place).read_text()
            assert text in (old[place], new[place]), f"run {run}: {place} is neither the old nor the new file"
            documents.parse(fmt, text, place)  # and it parses
            states.add(text == new[place])
        mixed += states == {True, False}
        untouched += states == {False}
        complete += states == {True}
        if adaptive and len(states) == 1:  # too early or too late: move towards the writes
            delay += step / 2 if states == {False} else -step / 2
    print(f"{run} kills: {untouched} before any write, {mixed} between writes, {complete} after the last")
    assert mixed >= RUNS // 20, f"only {mixed} kills landed between the first and the last write"
    assert untouched and complete, "the kills are spread over the whole sync"

    # After all that, one clean sync finishes the job and leaves no temporary files behind.
    _, status = os.waitpid(_sync_in_child(sandbox.env, config), 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert {place: (home / place).read_text() for place in PLACES.values()} == new
    leftovers = [p for p in home.rglob("*.projector-tmp")]
    assert leftovers == []
    json.loads((home / ".local/state/projector/ledger.json").read_text())
    tomllib.loads((home / ".codex/config.toml").read_text())


def _sync_killed_after_write(environ: dict[str, str], config: Path, writes: int) -> int:
    """A real `projector sync` that kills itself (SIGKILL) right after its ``writes``-th file
    write, whatever the file (a client's, the ledger, the fingerprint). Returns the writes done."""
    read, written = os.pipe()

    def die_after_the_write() -> None:
        from projector.core import files

        os.close(read)
        real, count = files.write_bytes, [0]

        def write_then_maybe_die(*args, **kwargs):
            result = real(*args, **kwargs)
            count[0] += 1
            os.write(written, b".")
            if count[0] == writes:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        files.write_bytes = write_then_maybe_die

    pid = _sync_in_child(environ, config, die_after_the_write)
    os.close(written)
    done = b""
    while chunk := os.read(read, 64):
        done += chunk
    os.close(read)
    os.waitpid(pid, 0)
    return len(done)


def test_a_kill_between_any_two_writes_leaves_no_entry_unowned(sandbox):
    """Client files were written first and the ledger after: killed in between, the new entries
    were nobody's, stayed in every client for good after their provider was removed, and status
    said "in sync" (issue 11, item 5). Killed after each write in turn, a sync must leave every
    entry it wrote owned: removing every provider then gives back each file byte for byte."""
    _warm()
    config = sandbox.model(MODEL)
    empty = sandbox.model("version: 1\nclients: [claude-code, codex, opencode, crush, kiro, copilot]\nproviders: {}\n", "empty.yaml")
    sandbox.install_projector()
    home = sandbox.home
    old = {place: (FIXTURES / fixture).read_bytes() for fixture, place in PLACES.items()}
    _restore(home)
    total = _sync_killed_after_write(sandbox.env, config, writes=1_000)  # not killed: how many writes a sync does
    assert total >= len(PLACES) + 1
    for writes in range(1, total + 1):
        _restore(home)
        assert _sync_killed_after_write(sandbox.env, config, writes) == writes
        _, status = os.waitpid(_sync_in_child(sandbox.env, empty), 0)
        assert os.waitstatus_to_exitcode(status) == 0
        left = {place: (home / place).read_bytes() for place in PLACES.values() if (home / place).read_bytes() != old[place]}
        assert left == {}, f"killed after write {writes} of {total}: entries nobody owns were left in {sorted(left)}"
