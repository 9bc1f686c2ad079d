"""`projector sync` with nothing to do, decided before anything heavy is imported.

The last complete sync recorded a fingerprint of everything its result depends on
(core.fingerprint). The next plain `sync` compares: equal stats, nothing to do. A client file
whose stat moved (some clients rewrite their file all the time) is parsed, that one file, with
the standard library, and when its projector slice is unchanged there is still nothing to do.
Only the standard library's `os`, `sys` and `marshal` are imported here (`json` or `tomllib`
when a client file's stat moved). Nothing below the entry point imports this module.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Mapping

from projector.core import locations
from projector.core.fingerprint import (NOTHING_TO_DO, Stat, entries_slice, fingerprint, fingerprint_path, hook_folder,
                                        hook_stamp_path, settled, stamp_hook)

SIMPLE = {"--quiet", "-q", "--hook"}  # options that do not change what a sync computes
QUIET = {"--quiet", "-q", "--hook"}
CONFIG = {"--config", "-c"}


def _restamp(files: Mapping[str, Stat], environ: Mapping[str, str]) -> None:
    """After the fast path found every file as the last sync left it (stats as they are now):
    the stamp at their newest mtime, once settled, and only forward (the sync may have put it
    past folders the hook also compares with it)."""
    newest = max((stat[0] for stat in files.values() if stat), default=0)
    try:
        current = os.stat(hook_stamp_path(environ)).st_mtime_ns
    except OSError:
        current = -1
    if settled(newest) and newest > current:
        try:
            stamp_hook(environ, newest)
        except OSError:
            pass


def still_holds(argv: list[str], environ: Mapping[str, str], version: str) -> list[str] | None:
    """For `projector sync [--quiet] [--hook] [--config F]`: None when a sync must run (the last
    sync's fingerprint no longer holds), else what that sync said of the state it left (the
    drift it kept), which this one, changing nothing, says again. From the hook, the hook's
    stamp then moves forward to what was checked."""
    options = argv[1:]
    config = locations.config_option(options)
    plain = [a for a in options if a not in CONFIG and a != config and not a.startswith("--config=")]
    if not argv or argv[0] != "sync" or any(a not in SIMPLE for a in plain):
        return None
    model = os.path.abspath(locations.model_file(config, environ))
    hook = "--hook" in plain
    if hook and not os.path.exists(os.path.join(hook_folder(environ), "watch")):
        return None  # the hook has nothing to watch yet: a sync writes its list
    try:
        with open(fingerprint_path(model, environ), "rb") as handle:
            saved = marshal.load(handle)
        now = fingerprint(model, saved["files"], saved["present"], saved["binaries"], saved["variables"], environ, version)
        if any(now[part] != saved[part] for part in ("version", "python", "model", "variables", "present", "binaries")):
            return None
        if not all(stat == saved["files"][path] or _same_entries(path, saved["files"][path], stat, saved["slices"].get(path))
                   for path, stat in now["files"].items()):
            return None
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return None
    if hook:
        _restamp(now["files"], environ)
    return list(saved.get("said", ()))


def _same_entries(path: str, before: Stat, now: Stat, spec: dict | None) -> bool:
    """A client file whose stat moved: whether projector's slice of it (every part of it that is
    projector's) is what the sync left."""
    if spec is None or spec["slice"] is None or before is None or now is None:
        return False
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except (OSError, UnicodeDecodeError):
        return False
    return entries_slice(text, spec["format"], spec["parts"]) == spec["slice"]


def main() -> bool:
    """True when the sync asked for on the command line has nothing to do (said so, unless quiet)."""
    from projector import __version__

    said = still_holds(sys.argv[1:], os.environ, __version__)
    if said is None:
        return False
    if not QUIET.intersection(sys.argv[2:]):
        print("\n".join(said or [NOTHING_TO_DO]))
    return True
