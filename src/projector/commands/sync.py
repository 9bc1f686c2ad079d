"""`projector sync`: write the model into every client's file (only files whose bytes change)."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path

from projector.commands.common import busy, carry_out, compute, dry_sync, err, load_model, report_warnings
from projector.compile import clients as client_registry
from projector.compile import engine, ledger
from projector.compile.system import stat_of
from projector.compile.targets import Dependencies, dependencies
from projector.core import files, fingerprint, model, projects
from projector.core.errors import ProjectorError
from projector.core.locations import state_dir
from projector.core.modeltypes import Model

LEGACY = ("fingerprint", "hook-watch", "hook-stamp")  # 0.2.0 kept one of each, shared by every model


def run(config: str | None, client: list[str] | None, force: bool, quiet: bool, wait: float, hook: bool = False,
        as_json: bool = False, dry_run: bool = False) -> int:
    """``hook``: run by the shell hook, which only the fast path (fingerprint.py) tells apart; a full
    sync is the same either way. ``dry_run``: what would be written, through the dry-run system
    (as diff), with nothing written and nothing remembered."""
    from projector.compile.report import by_file, change_line, kept_lines

    if dry_run:
        return _dry_run(config, client, force, quiet, as_json)
    from projector.commands import log

    why = log.hook_trigger(os.environ) if hook else "run by hand"

    environ = os.environ
    # Before anything is read, on the files' clock (see core.fingerprint), to the second: a filesystem may keep no finer time.
    # (_stamp takes it to the second where a file's time may be whole seconds.)
    started = time.time_ns() - fingerprint.STAMP_MARGIN_NS
    # What the model and the trust store were before this sync read them: an edit made while it
    # runs must show in the fingerprint, or the next sync would think it already done.
    inputs = {p: stat_of(p) for p in (str(model.model_path(config, environ).absolute()), projects.trust_path(environ))}
    try:
        outcome, written = carry_out(lambda: compute(config, client, force, dry_run=False), wait)
    except files.Busy:
        return busy("nothing was written")
    except ProjectorError as error:
        err(f"error: {error}")
        remember(config, complete=False, observed={**_as_read(error), **inputs}, started=started)
        log.append(os.environ, log.entry("hook" if hook else "sync", why, _shown_model(config), [], [], [str(error)]))
        return 2
    complete = not (outcome.problems or written.problems or client or force)
    observed = {**inputs, **_layers_as_read(outcome.model), **outcome.system.observed}
    kept = kept_lines(written.results)
    remember(config, complete=complete, observed=observed, started=started, outcome=outcome, results=written.results, said=kept)
    log.append(os.environ, log.entry("hook" if hook else "sync", why, _shown_model(config),
                                     [change_line(result) for result in by_file(written.results) if result.changed], kept,
                                     [str(p) for p in outcome.problems + tuple(written.problems)]))
    return _said(outcome, written, quiet, as_json, dry_run=False)


def _shown_model(config: str | None) -> str:
    from projector.core.errors import display_path

    return display_path(model.model_path(config, os.environ).absolute())


def _dry_run(config: str | None, client: list[str] | None, force: bool, quiet: bool, as_json: bool) -> int:
    try:
        outcome, _, written = dry_sync(config, client, force)
    except ProjectorError as error:
        err(f"error: {error}")
        return 2
    return _said(outcome, written, quiet, as_json, dry_run=True)


def _said(outcome: engine.Outcome, written: engine.Written, quiet: bool, as_json: bool, dry_run: bool) -> int:
    """What a sync, or its dry run, tells of its result, and its exit code: a line per file it
    wrote (would write), the drift it kept, or that there was nothing to do; then its warnings.
    A file of several targets (Codex's config.toml: its servers and its hooks' trust) is one line.
    Quiet, only a repository's file a sync changed is said: the hook changes it behind the
    user's back (a dry run changes nothing)."""
    from projector.compile.report import by_file, change_line, kept_lines, sync_report

    problems = outcome.problems + tuple(written.problems)
    if as_json:
        import json

        print(json.dumps(sync_report(written.results, outcome.warnings, problems, dry_run), indent=2))
        return 1 if problems else 0
    changed = [result for result in by_file(written.results) if result.changed]
    if quiet:
        lines = [change_line(result) for result in changed if result.target.is_project and not dry_run]
    else:
        lines = [change_line(result, dry_run=dry_run) for result in changed] + kept_lines(written.results)
        lines += [] if lines or problems else [fingerprint.NOTHING_TO_DO]
    for line in lines:
        print(line)
    report_warnings(outcome, written.problems)
    return 1 if problems else 0


def remember(config: str | None, complete: bool, observed: dict, started: int, outcome: engine.Outcome | None = None,
             results: tuple = (), said: list[str] | None = None) -> None:
    """After a sync: the fast path's fingerprint (a complete, clean sync only), from the stats
    and the text this sync saw (``observed``, ``results``); and, when the sync was of the model
    the environment names (as the shell hook's is), the hook's watch list and the stamp it
    compares files with (``started``: when the sync began, on the files' clock). ``outcome``:
    the sync's computation (its model and what it found of the folders), absent when it failed;
    ``said``: what it said of the state it left (kept drift), which the fast path says again."""
    from projector import __version__
    from projector.core.locations import VARIABLES

    environ = os.environ
    model_file = str(model.model_path(config, environ).absolute())
    try:
        if outcome is None:
            loaded, recorded, survey = load_model(config), projects.recorded(environ), None
        else:
            loaded, recorded, survey = outcome.model, outcome.projects, outcome.survey
        needs = dependencies(loaded, list(client_registry.registry().values()), environ, recorded, survey)
    except ProjectorError as error:
        needs = Dependencies(tuple(dict.fromkeys((model_file, *_as_read(error)))), (), (), ("projector",), VARIABLES)
    if complete:
        providers = tuple(outcome.providers) if outcome else ()
        slices = _slices([r for r in results if not r.target.is_project], providers)
        files_read = (*needs.files, *needs.project_files, str(ledger.ledger_path(environ)))
        data = fingerprint.fingerprint(model_file, files_read, needs.present, needs.binaries, needs.variables, environ, __version__,
                                    observed, slices, said or ())
        fingerprint.record(model_file, data, environ)
    else:
        fingerprint.forget(model_file, environ)
    if config is None:
        watch = hook_watch(needs, environ, engine.projector_on_path(environ), observed)
        files.write_text(Path(fingerprint.hook_folder(environ)) / "watch", watch)
        looked_into = {folder: names.split("\t") for line in watch.splitlines() if line[:1] == "%"
                       for folder, _, names in [line[1:].partition("\t")]}
        compared = [*needs.files, *needs.project_files, *looked_into]
        fingerprint.stamp_hook(environ, _stamp(compared, observed, started, absent=looked_into))  # last: what the hook compares files with
    for name in LEGACY:
        (state_dir(environ) / name).unlink(missing_ok=True)


def _layers_as_read(loaded: Model) -> dict[str, object]:
    """The stat of each file the model includes while it holds the bytes this sync read (see
    core.layers.as_seen, imported only for a model that includes files)."""
    if len(loaded.layers) < 2:
        return {}
    from projector.core.layers import as_seen

    return as_seen(loaded, stat_of, [0, -1, 0, 0])


def _as_read(error: ProjectorError) -> dict[str, tuple[int, ...] | None]:
    """The files a model's failed check read or looked for (its layers: a mistake in one a team
    shares is mended there, by hand or by a `git pull`), each with the stat taken before it was
    read, as this module's stats are written: watched, as the model itself, until they change."""
    read = getattr(error, "read", {})  # core.layers.checked: [inode, ctime, mtime, size] or None
    return {path: None if stat is None else (stat[2], stat[3], stat[0], stat[1]) for path, stat in read.items()}


def _slices(results: list[engine.FileResult], providers: tuple[str, ...]) -> dict[str, dict]:
    """Per client file, what the fast path compares of it: one slice over every part of it that
    is projector's (Codex's config.toml: its servers, and the trust of projector's hook groups
    under another key), from the text the last of them leaves. A slice of one part alone would
    take a hand edit of another's entries for nothing to do; none at all would make every edit
    the client makes elsewhere in its file (Codex: a project's trust level) a full sync."""
    from projector.compile.report import parts_by_file

    slices = {}
    for parts in parts_by_file(results):
        final = parts[-1]
        if final.after is not None:
            spec = {"format": final.target.format, "parts": [_part(part, providers) for part in parts]}
            slices[str(final.path)] = spec | {"slice": fingerprint.entries_slice(final.after, spec["format"], spec["parts"])}
    return slices


def _part(result: engine.FileResult, providers: tuple[str, ...]) -> dict:
    """What the fast path compares of one of projector's parts of a client file: the entries it
    may hold under its key (a provider's, one it wants, one the ledger says it wrote), and for
    servers, those in the client's per-folder scopes."""
    target = result.target
    recorded = result.record.entries if result.record else {}
    names = {target.client.entry_name(p) for p in providers} | set(target.desired or ()) | set(recorded)
    scopes = [list(scope) for scope in target.client.local_scopes] if target.kind == "servers" else []
    return {"key": list(target.key), "scopes": scopes, "names": sorted(names)}


def hook_watch(needs: Dependencies, environ: Mapping[str, str], projector: str | None, observed: Mapping[str, object] | None = None) -> str:
    """The hook's watch list, one check per line, each decided by shell builtins alone:
    ``+FILE`` must exist and be no newer than the stamp; ``^PATH`` must exist; ``-PATH`` must not;
    ``%FOLDER<TAB>NAME...``: what must not appear in FOLDER (an absent project file, or the first
    missing folder on its way there), looked for only when FOLDER changed since the stamp, so a
    file created beside them costs a few tests and starts nothing, and a thousand bound folders
    that do not exist yet are one short line; ``=NAME=value`` / ``!NAME``: a variable set so / unset;
    ``@PATH``: where projector was on PATH."""
    seen = observed or {}
    present = lambda p: seen[p] is not None if p in seen else os.path.lexists(p)  # noqa: E731 - as this sync saw it
    lines = [("+" if present(p) else "-") + p for p in needs.files]
    lines += [("^" if os.path.lexists(p) else "-") + p for p in needs.present]
    absent: dict[str, set[str]] = {}
    for path in needs.project_files:
        if present(path):
            lines.append("+" + path)
            continue
        child, folder = path, os.path.dirname(path)
        while not os.path.isdir(folder) and folder != "/":
            child, folder = folder, os.path.dirname(folder)
        absent.setdefault(folder, set()).add(os.path.basename(child))  # the first of its path missing there
    lines += ["%" + folder + "\t" + "\t".join(sorted(names)) for folder, names in sorted(absent.items())]
    lines += [_watched_variable(name, environ.get(name)) for name in needs.variables if name != "PATH"]  # PATH: the @ line
    return "".join(line + "\n" for line in lines if line) + f"@{projector or ''}\n"


def _watched_variable(name: str, value: str | None) -> str:
    """A hook-watch line for a variable: ``=NAME=value`` while set, ``!NAME`` while unset. A value
    a line cannot hold (a newline; a tab, which splits the hook's lines) is left out (the fast
    path still compares it, at the next sync)."""
    if value is None:
        return f"!{name}"
    return f"={name}={value}" if not {"\n", "\t", "\0"} & set(value) else ""


def _stamp(paths: list[str], observed: dict, started: int, waited: bool = False, absent: Mapping[str, list[str]] | None = None) -> int:
    """The hook's stamp (see core.fingerprint): the newest watched mtime when every file is as this sync
    saw it (or, one it did not read, unchanged since it began) and that mtime has settled; else
    when the sync began, so a change made while it ran is newer. Files this sync just wrote
    settle within a few hundredths of a second: waiting for that spares the next prompt a run.
    The folders the hook looks into for absent project files (``absent``: folder -> the names it
    looks for) count as paths it did not read, but one that changed since the sync began while
    none of those names appeared (a file made beside them) is as the sync saw it, and so is a file
    whose fine-grained mtime is before the moment the sync began (``started``, to the
    nanosecond; the stamp falls back to its whole second): taking that second for either would
    put every file this sync wrote after the stamp, and the next prompt would start projector
    again for nothing."""
    second = started // 1_000_000_000 * 1_000_000_000  # what the stamp falls back to: a filesystem may keep whole seconds
    newest = 0
    for path in set(paths):
        now = stat_of(path)
        if path in observed:
            if now != observed[path]:
                return second
        elif now is not None and _since(now[0], started, second) and not _still_absent(path, now[0], (absent or {}).get(path)):
            return second
        newest = max(newest, now[0] if now else 0)
    wait = fingerprint.unsettled_for(newest)
    if wait == 0:
        return newest
    if waited or wait > 2 * fingerprint.STAMP_MARGIN_NS:
        return second
    time.sleep(wait / 1e9)
    return _stamp(paths, observed, started, waited=True, absent=absent)


def _since(mtime: int, started: int, second: int) -> bool:
    """Whether a file this sync did not stat as it read it may have changed after it began: an
    mtime in whole seconds (a filesystem that keeps no finer time) from the second it began on,
    a finer one from the moment it began (a project file written in the same second, before the
    sync, is as the sync read it); ``second``: the whole second ``started`` is in."""
    return mtime >= (second if mtime % 1_000_000_000 == 0 else started)


def _still_absent(folder: str, mtime: int, names: list[str] | None) -> bool:
    """Whether none of ``names`` is in ``folder``, looked for once its mtime has settled (so a
    name that appears later gives the folder a later mtime, which the hook sees); False when
    there are no names to look for or the mtime will not settle soon."""
    if not names:
        return False
    wait = fingerprint.unsettled_for(mtime)
    if wait > 2 * fingerprint.STAMP_MARGIN_NS:
        return False
    if wait:
        time.sleep(wait / 1e9)
    if stat_of(folder) is None or stat_of(folder)[0] != mtime:
        return False  # it changed again meanwhile: the sync cannot vouch for it
    return not any(os.path.lexists(os.path.join(folder, name)) for name in names)
