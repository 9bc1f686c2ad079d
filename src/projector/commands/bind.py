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
    providers = _providers(config)
    done = edit_model(config, "bind", lambda text, shown: modeledit.bind(text, shown, folder, provider, kbs, os.environ, enabled, providers))
    if done == 0:
        _warn_if_absent(folder)
    return done


def _providers(config: str | None) -> dict[str, bool] | None:
    """Each provider of the model, its layers merged, and whether it is local; None when the
    model does not load (its own check says why). A provider left out until a layer is trusted
    counts: binding it only narrows it."""
    from projector.commands.common import load_model

    try:
        loaded = load_model(config)
        return {p.name: p.local for p in loaded.providers + loaded.withheld}
    except ProjectorError:
        return None


def unbind(folder: str, provider: str | None, config: str | None) -> int:
    from projector.core import modeledit

    return edit_model(config, "unbind", lambda text, shown: modeledit.unbind(text, shown, folder, provider, os.environ))


def edit_model(config: str | None, verb: str, edit: Callable[[str, str], str]) -> int:
    """Edit the model's text, check the result like a hand edit, write it (compare-and-swap).
    A check that fails names what is wrong, never a line of the edited text: that text was not
    written, so its lines are nowhere the user can look."""
    path = model.model_path(config, os.environ)
    shown = display_path(path)
    known = tuple(client_registry.registry())
    try:
        text = path.read_text(encoding="utf-8")
        edited = edit(text, shown)
    except FileNotFoundError:
        err(f"error: {shown}: no model here: run `projector init` first")
        return 2
    except ProjectorError as error:
        err(f"error: {error}\nnothing was changed")
        return 1
    try:
        model.checked_text(edited, path, os.environ, known)
    except ProjectorError as error:
        try:
            model.checked_text(text, path, os.environ, known)
        except ProjectorError as already:
            err(f"error: {already}\n{shown} has mistakes of its own: fix them first (`projector edit`); nothing was changed")
            return 1
        reasons = "\n".join(f"  {problem.message}" for problem in error.problems)
        err(f"error: {shown}: this {verb} would make the model invalid:\n{reasons}\nnothing was changed")
        return 1
    try:
        files.write_text(path, edited, expected=text)
    except files.ChangedMeanwhile:
        err(f"error: {shown} changed while projector edited it; nothing was written, try again")
        return 1
    print(f"updated {shown}: run `projector sync` to apply it (the shell hook does it at the next prompt)")
    return 0


def _warn_if_absent(folder: str) -> None:
    try:
        expanded = model.expand_path(folder, os.environ)
    except KeyError:
        return
    if not os.path.isdir(expanded):
        err(f"warning: {display_path(expanded)} does not exist (yet): the binding applies once it does; check the spelling")
