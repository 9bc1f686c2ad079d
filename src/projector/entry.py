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
    if command == ["sync"]:
        from projector import fastpath

        if fastpath.main():
            sys.exit(0)
    if command in (["sync"], ["status"], ["diff"]):
        import os

        from projector import direct

        call = direct.parse(sys.argv[1:], os.environ)
        if call is not None:
            sys.exit(direct.run(call))
    from projector.cli import main as cli

    cli()
