"""The `projector` command. Clients spawn `projector mcp` for every session and shell hooks run
`projector sync` at prompts, so those paths start with nothing but what they need; every other
command goes to the typer app."""

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
    from projector.cli import main as cli

    cli()
