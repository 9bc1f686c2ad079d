"""How clients start projector: the command lines that the compiler writes into their files and
the runtime reads back. One place, so the two sides cannot disagree."""

from __future__ import annotations

BRIDGE = "mcp"  # `projector mcp --provider NAME [--config FILE]`


def bridge_args(provider: str, config: str | None = None) -> tuple[str, ...]:
    """The bridge's arguments; ``config``: the model's path when the bridge cannot find it alone."""
    return (BRIDGE, "--provider", provider) + (("--config", config) if config else ())


DISPATCH = "dispatch"  # `projector dispatch [--config FILE] [--block json] EVENT`


def dispatch_args(event: str, config: str | None = None, block: str = "exit-2") -> tuple[str, ...]:
    """The hook dispatcher's arguments for one event (projector's name for it)."""
    return (DISPATCH, *(("--config", config) if config else ()), *(("--block", block) if block != "exit-2" else ()), event)


def runs_dispatch(command: object) -> bool:
    """Whether a hook's shell command line is projector's dispatcher (any path, any flags)."""
    import shlex

    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return len(words) >= 2 and words[0].rsplit("/", 1)[-1] == "projector" and words[1] == DISPATCH
