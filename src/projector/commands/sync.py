"""`projector sync`: write the model into every client's file (only files whose bytes change)."""

from __future__ import annotations

import os
import time

from projector import fastpath
from projector.commands.common import compute, err, load_model, report_warnings
from projector.compile import clients as client_registry
from projector.compile import engine, ledger
from projector.compile.system import stat_of
from projector.core import files, model, projects
from projector.core.errors import ProjectorError, display_path
from projector.core.locations import state_dir


def run(config: str | None, client: list[str] | None, force: bool, quiet: bool, wait: float, hook: bool) -> int:
    from projector.compile.report import change_line

    environ = os.environ
    lock = state_dir(environ) / "sync.lock"
    # Before anything is read, on the files' clock (see fastpath), to the second: a filesystem may keep no finer time.
    started = (time.time_ns() - fastpath.STAMP_MARGIN_NS) // 1_000_000_000 * 1_000_000_000
    # What the model and the trust store were before this sync read them: an edit made while it
    # runs must show in the fingerprint, or the next sync would think it already done.
    inputs = {p: stat_of(p) for p in (str(model.model_path(config, environ)), projects.trust_path(environ))}
    try:
        with files.exclusive(lock, wait):
            outcome, state = compute(config, client, force, dry_run=False)
            written = engine.write(outcome, state, ledger.ledger_path(environ))
    except files.Busy:
        err(f"error: another projector sync is running (it holds {display_path(lock)}); nothing was written, try again")
        return 2
    except ProjectorError as error:
        err(f"error: {error}")
        remember(config, complete=False, hook=hook, observed=inputs, started=started)
        return 2
    complete = not (outcome.problems or written.problems or client or force)
    for result in written.results:
        if result.after is None:
            outcome.survey.forget(str(result.path))  # a project file this sync removed
    remember(config, complete=complete, hook=hook, observed={**inputs, **outcome.system.observed}, started=started, outcome=outcome)
    if not quiet:
        for result in written.results:
            if result.changed:
                print(change_line(result))
    report_warnings(outcome, written.problems)
    return 1 if outcome.problems or written.problems else 0


def remember(config: str | None, complete: bool, hook: bool, observed: dict, started: int, outcome: engine.Outcome | None = None) -> None:
    """After a sync: the fast path's fingerprint (a complete, clean sync only), from the stats
    this sync saw (``observed``), and, for the shell hook, the files to watch and the stamp they
    are compared with (``started``: when the sync began, on the files' clock). ``outcome``: the
    sync's computation (its model and what it found of the folders), absent when it failed."""
    from projector import __version__
    from projector.compile.targets import Dependencies, dependencies
    from projector.core.locations import VARIABLES

    environ = os.environ
    model_file = str(model.model_path(config, environ))
    try:
        if outcome is None:
            loaded, recorded, survey = load_model(config), projects.recorded(environ), None
        else:
            loaded, recorded, survey = outcome.model, outcome.projects, outcome.survey
        found = dependencies(loaded, list(client_registry.registry().values()), environ, recorded, survey)
    except ProjectorError:
        found = Dependencies([model_file], ["projector"], list(VARIABLES))
    if complete:
        paths = found.paths + [str(ledger.ledger_path(environ))]
        fastpath.record(model_file, paths, found.binaries, found.variables, environ, __version__, observed)
    else:
        fastpath.forget(environ)
    if hook:
        present = lambda p: observed[p] is not None if p in observed else os.path.exists(p)  # noqa: E731 - as seen
        watch = "".join(("+" if present(p) else "-") + p + "\n" for p in sorted(set(found.paths)))
        watch += "".join(_watched_variable(name, environ.get(name)) for name in found.variables if name != "PATH")  # PATH: the @ line
        watch += f"@{engine.projector_on_path(environ) or ''}\n"  # where projector was on PATH
        files.write_text(state_dir(environ) / "hook-watch", watch)
        fastpath.stamp_hook(environ, _stamp(found.paths, observed, started))  # last: what the hook compares files with


def _watched_variable(name: str, value: str | None) -> str:
    """A hook-watch line for a variable: ``=NAME=value`` while set, ``!NAME`` while unset. A value
    a line cannot hold is left out (the fast path still compares it, at the next sync)."""
    if value is None:
        return f"!{name}\n"
    return f"={name}={value}\n" if "\n" not in value and "\0" not in value else ""


def _stamp(paths: list[str], observed: dict, started: int, waited: bool = False) -> int:
    """The hook's stamp (see fastpath): the newest watched mtime when every file is as this sync
    saw it (or, one it did not read, unchanged since it began) and that mtime has settled; else
    when the sync began, so a change made while it ran is newer. Files this sync just wrote
    settle within a few hundredths of a second: waiting for that spares the next prompt a run."""
    newest = 0
    for path in set(paths):
        now = stat_of(path)
        if (now != observed[path]) if path in observed else (now is not None and now[0] >= started):
            return started
        newest = max(newest, now[0] if now else 0)
    wait = fastpath.unsettled_for(newest)
    if wait == 0:
        return newest
    if waited or wait > 2 * fastpath.STAMP_MARGIN_NS:
        return started
    time.sleep(wait / 1e9)
    return _stamp(paths, observed, started, waited=True)
