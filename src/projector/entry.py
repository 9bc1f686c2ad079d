"""The `projector` command. Clients spawn `projector mcp` for every session and shell hooks run
`projector sync` at prompts, so those paths start with nothing but what they need: `mcp` goes
to the bridge, a `sync` with nothing to do stops at the fast path, and `sync`, `status` and
`diff` command lines that direct.py reads exactly as typer would run without typer. Every
other command line goes to the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    command = sys.argv[1:2]
    if command == ["mcp"]:
        from projector.runtime.bridge import main as bridge

        bridge(sys.argv[2:])
        return
    if command == ["dispatch"]:
        from projector.runtime.dispatch import main as dispatch

        dispatch(sys.argv[2:])
    if command == ["sync"]:
        from projector import fastpath

        if fastpath.main():
            sys.exit(0)
    if command in (["sync"], ["status"], ["diff"]):
        import os

        _no_cycle_collection()
        from projector import direct

        call = direct.parse(sys.argv[1:], os.environ)
        if call is not None:
            sys.exit(direct.run(call))
    _no_cycle_collection()
    from projector.cli import main as cli

    cli()


def _no_cycle_collection() -> None:
    """A command other than ``mcp`` (which may serve for hours) lives a fraction of a second and
    makes few reference cycles; the cycle collector's passes over all that its imports create
    (4% of a sync, 9% of --help with typer's) and its last pass at exit (5%) find next to
    nothing, so neither runs: the process's memory goes back whole at exit."""
    import atexit
    import gc

    if not gc.isenabled():
        return
    gc.disable()
    atexit.register(gc.freeze)  # the interpreter's final collection leaves frozen objects alone
