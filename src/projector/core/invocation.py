"""How clients start projector: the command lines that the compiler writes into their files and
the runtime reads back. One place, so the two sides cannot disagree."""

from __future__ import annotations

BRIDGE = "mcp"  # `projector mcp --provider NAME [--config FILE]`


def bridge_args(provider: str, config: str | None = None) -> tuple[str, ...]:
    """The bridge's arguments; ``config``: the model's path when the bridge cannot find it alone."""
    return (BRIDGE, "--provider", provider) + (("--config", config) if config else ())
