"""`projector sync` with nothing to do, decided before anything heavy is imported.

A full sync records a fingerprint of everything its result depends on: the stat of the model
file, of every client and project file it read (or their absence), of the folders and binaries
that decide which clients are present, where `projector` is on PATH, the variables that move
these files (their names come from the client descriptors, through the function that lists the
files, and are kept in the fingerprint itself: nothing here loads a descriptor), and projector's
own version. The next plain `sync` recomputes it with `os.stat` alone; when it is equal, there
is nothing to do and it exits at once. Only the standard library's `os`, `sys` and `marshal`
are imported here.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterable, Mapping

from projector.core import locations

SIMPLE = {"--quiet", "-q", "--hook"}  # options that do not change what a sync computes
CONFIG = {"--config", "-c"}


def fingerprint_path(environ: Mapping[str, str]) -> str:
    return os.path.join(locations.state_folder(environ), "fingerprint")


# --------------------------------------------------------------------------- the shell hook's stamp
# The prompt hook (shell/) runs `projector sync --hook` when a watched file is newer than the
# stamp. So the stamp must never be later than a change a sync did not see: it is the newest
# mtime of the watched files once they are known to be as the sync saw them, and only once that
# mtime has settled (a file's mtime comes from the kernel's coarse clock, up to a tick behind
# time.time_ns(), and a change in the same tick would not be newer); otherwise it is the time the
# sync started, and the next prompt's fast path, finding nothing changed, moves it forward.

STAMP_MARGIN_NS = 50_000_000


def hook_stamp_path(environ: Mapping[str, str]) -> str:
    return os.path.join(locations.state_folder(environ), "hook-stamp")


def unsettled_for(mtime_ns: int) -> int:
    """Nanoseconds until a change to a file can no longer get ``mtime_ns`` (0: already). A time
    in whole seconds may come from a filesystem that keeps nothing finer: its second must pass."""
    import time

    tick = 1_000_000_000 if mtime_ns % 1_000_000_000 == 0 else 0
    return max(0, mtime_ns + tick + STAMP_MARGIN_NS - time.time_ns())


def settled(mtime_ns: int) -> bool:
    return unsettled_for(mtime_ns) == 0


def stamp_hook(environ: Mapping[str, str], mtime_ns: int) -> None:
    path = hook_stamp_path(environ)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _restamp(files: Mapping[str, list[int] | None], environ: Mapping[str, str]) -> None:
    """After the fast path found every file as the last sync saw it: the stamp at their newest mtime."""
    newest = max((stat[0] for stat in files.values() if stat), default=0)
    if settled(newest):
        try:
            stamp_hook(environ, newest)
        except OSError:
            pass


def _stat(path: str) -> list[int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns]  # as compile.system.stat_of


def fingerprint(
    model: str,
    paths: Iterable[str],
    binaries: Iterable[str],
    variables: Iterable[str],
    environ: Mapping[str, str],
    version: str,
    observed: Mapping | None = None,
) -> dict:
    """``observed``: stats as the sync saw them (path -> (mtime_ns, size, inode, ctime_ns) or None), which
    win over a stat taken now: a client that rewrote its file since must make the next sync work."""
    seen = observed or {}
    return {
        "version": version,
        "python": sys.version,
        "model": model,
        "variables": {name: environ.get(name) for name in sorted(set(variables) | set(locations.VARIABLES))},
        "files": {path: (list(seen[path]) if seen[path] else None) if path in seen else _stat(path) for path in sorted(set(paths))},
        "binaries": {name: locations.on_path(name, environ) for name in sorted(set(binaries))},
    }


def record(
    model: str,
    paths: Iterable[str],
    binaries: Iterable[str],
    variables: Iterable[str],
    environ: Mapping[str, str],
    version: str,
    observed: Mapping | None = None,
) -> None:
    """Remember what this sync depended on (called after a sync that left nothing pending)."""
    from pathlib import Path

    from projector.core import files

    data = marshal.dumps(fingerprint(model, paths, binaries, variables, environ, version, observed))
    files.write_bytes(Path(fingerprint_path(environ)), data)


def forget(environ: Mapping[str, str]) -> None:
    try:
        os.unlink(fingerprint_path(environ))
    except OSError:
        pass


def nothing_to_do(argv: list[str], environ: Mapping[str, str], version: str) -> bool:
    """For `projector sync [--quiet] [--hook] [--config F]`: whether the last sync's fingerprint
    still holds."""
    options = argv[1:]
    config = locations.config_option(options)
    plain = [a for a in options if a not in CONFIG and a != config and not a.startswith("--config=")]
    if not argv or argv[0] != "sync" or any(a not in SIMPLE for a in plain):
        return False
    model = locations.model_file(config, environ)
    try:
        with open(fingerprint_path(environ), "rb") as handle:
            saved = marshal.load(handle)
        if saved != fingerprint(model, saved["files"], saved["binaries"], saved["variables"], environ, version):
            return False
    except (OSError, ValueError, KeyError, TypeError, EOFError):
        return False
    if "--hook" in plain:
        _restamp(saved["files"], environ)
    return True


def main() -> bool:
    """True when the sync asked for on the command line has nothing to do."""
    from projector import __version__

    return nothing_to_do(sys.argv[1:], os.environ, __version__)
