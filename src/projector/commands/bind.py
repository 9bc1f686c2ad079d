"""`projector bind` and `projector unbind`: edits of the model that keep its comments."""

from __future__ import annotations

import os
from collections.abc import Callable

from projector.commands.common import err
from projector.compile import clients as client_registry
from projector.core import files, model
from projector.core.errors import ProjectorError, display_path


def bind(folder: str, provider: str, kb: list[str] | None, no_kb: bool, on: bool, off: bool, config: str | None) -> int:
    if [bool(kb), no_kb, on, off].count(True) != 1:
        err("error: give one of --kb NAME (repeatable), --no-kb, --on or --off")
        return 2
    from projector.core import modeledit

    kbs = list(kb or []) if (kb or no_kb) else None
    enabled = on if (on or off) else None
    return edit_model(config, lambda text, shown: modeledit.bind(text, shown, folder, provider, kbs, os.environ, enabled))


def unbind(folder: str, provider: str | None, config: str | None) -> int:
    from projector.core import modeledit

    return edit_model(config, lambda text, shown: modeledit.unbind(text, shown, folder, provider, os.environ))


def edit_model(config: str | None, edit: Callable[[str, str], str]) -> int:
    """Edit the model's text, check the result like a hand edit, write it (compare-and-swap)."""
    path = model.model_path(config, os.environ)
    shown = display_path(path)
    try:
        text = path.read_text(encoding="utf-8")
        edited = edit(text, shown)
        model.checked_text(edited, shown, os.environ, tuple(client_registry.registry()))
        files.write_text(path, edited, expected=text)
    except FileNotFoundError:
        err(f"error: {shown}: no model here: run `projector init` first")
        return 2
    except ProjectorError as error:
        err(f"error: {error}")
        return 1
    except files.ChangedMeanwhile:
        err(f"error: {shown} changed while projector edited it; nothing was written, try again")
        return 1
    print(f"updated {shown}: run `projector sync` to apply it")
    return 0
