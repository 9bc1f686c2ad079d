"""The `projector` command. Clients spawn `projector mcp` for every session, so that path
starts with nothing but what the bridge needs; every other command goes to the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["mcp"]:
        from projector.bridge import main as bridge

        bridge(sys.argv[2:])
        return
    from projector.cli import main as cli

    cli()
