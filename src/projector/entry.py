"""The `projector` command. Clients spawn `projector mcp` for every session and shell hooks run
`projector sync` at prompts, so those paths start with nothing but what they need; every other
command goes to the typer app."""

from __future__ import annotations

import sys


def main() -> None:
    command = sys.argv[1:2]
    if command == ["mcp"]:
        _inspect_on_first_use()
        from projector.runtime.bridge import main as bridge

        bridge(sys.argv[2:])
        return
    if command == ["sync"]:
        from projector import fastpath

        if fastpath.main():
            sys.exit(0)
    from projector.cli import main as cli

    cli()


def _inspect_on_first_use() -> None:
    """``dataclasses`` imports ``inspect`` (with ast, dis and tokenize: about a fifth of a bridge
    start) only to write a docstring for a class that has none. Every class on the bridge's path
    has one, so ``inspect`` is loaded only if something really uses it."""
    if "inspect" in sys.modules:
        return
    import types

    class OnFirstUse(types.ModuleType):
        def __getattr__(self, name: str) -> object:
            del sys.modules["inspect"]
            import inspect

            return getattr(inspect, name)

    sys.modules["inspect"] = OnFirstUse("inspect")
