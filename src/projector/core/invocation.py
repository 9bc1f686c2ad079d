"""How clients start projector: the command lines that the compiler writes into their files and
the runtime reads back. One place, so the two sides cannot disagree."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from projector.core import locations

BRIDGE = "mcp"  # `projector mcp --provider NAME [--config FILE] [--state DIR]`


def bridge_args(provider: str, options: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The bridge's arguments; ``options``: what it needs to find its files (``bridge_options``)."""
    return (BRIDGE, "--provider", provider, *options)


def bridge_options(model: Path, environ: Mapping[str, str]) -> tuple[str, ...]:
    """What a bridge must be told to find the model and projector's state folder (the trust
    store) when a client starts it with a cleared environment: such a client keeps HOME, PATH,
    USER, LANG and a few more, never XDG_* or PROJECTOR_*. So the default places are judged
    against HOME alone: ``--config`` when the model is elsewhere, ``--state`` when the state
    folder is. A model made in code (a relative path) is not named."""
    cleared = {"HOME": locations.home_text(environ)}
    options: tuple[str, ...] = ()
    if model.is_absolute() and str(model) != locations.model_file(None, cleared):
        options += ("--config", str(model))
    state = os.path.abspath(locations.state_folder(environ))
    if state != locations.state_folder(cleared):
        options += ("--state", state)
    return options


DISPATCH = "dispatch"  # `projector dispatch [--config FILE] [--state DIR] [--block json] EVENT`


def dispatch_args(event: str, options: tuple[str, ...] = (), block: str = "exit-2") -> tuple[str, ...]:
    """The hook dispatcher's arguments for one event (projector's name for it); ``options``: as
    the bridge's (``bridge_options``)."""
    return (DISPATCH, *options, *(("--block", block) if block != "exit-2" else ()), event)


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
