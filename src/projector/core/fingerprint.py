"""What a sync leaves for the next one to compare: its fingerprint, and the shell hook's stamp
and watch list, one folder per model (``$XDG_STATE_HOME/projector/models/<model path>/``).

A complete sync records a fingerprint of everything its result depends on: projector's version,
the variables that move the files (their names come from the client descriptors, through the
function that lists the files, and are kept in the fingerprint itself: nothing that reads it
loads a descriptor), where the binaries are on PATH, the stat of the model, of the trust store,
of every client file and of every project file (present or not) as the sync saw it, whether each
path that tells a client is installed exists, and, for each client file, its projector slice:
in each of projector's parts of it (its servers key, and in a file that holds more, as Codex's
config.toml holds the trust of projector's hook groups, theirs), the entries whose names are
projector's providers or entries (and those in per-folder scopes). The fast path (fastpath.py)
compares it before anything heavy is imported; the sync (commands/sync.py) writes it. Only the
standard library's ``os``, ``sys`` and ``marshal`` are imported here (``json`` or ``tomllib`` for
a client file's slice).

The shell hook keeps its watch list and stamp in the same per-model folder, named from the
variables the shell itself sees (see shell/), so shells with different models never disturb
each other.
"""

from __future__ import annotations

import marshal
import os
import sys
from collections.abc import Iterable, Mapping

from projector.core import locations

NOTHING_TO_DO = "nothing to do: every client's file already matches the model"

Stat = list[int] | None


def model_folder(model: str, environ: Mapping[str, str]) -> str:
    """Where the fast path and the hook keep what they know of one model."""
    return os.path.join(locations.state_folder(environ), "models", os.path.abspath(model).lstrip("/"))


def hook_folder(environ: Mapping[str, str]) -> str:
    """The model's folder as the shell hook names it: from $PROJECTOR_CONFIG, else the XDG
    default, spelled as the shell sees them (no normalising: the hook has only builtins)."""
    config_home = environ.get("XDG_CONFIG_HOME") or locations.home_text(environ) + "/.config"
    model = environ.get("PROJECTOR_CONFIG") or config_home + "/projector/projector.yaml"
    return locations.state_folder(environ) + "/models/" + model.lstrip("/")


def fingerprint_path(model: str, environ: Mapping[str, str]) -> str:
    return os.path.join(model_folder(model, environ), "fingerprint")


# --------------------------------------------------------------------------- the shell hook's stamp
# The prompt hook (shell/) runs `projector sync --hook` when a watched file is newer than the
# stamp. So the stamp must never be later than a change a sync did not see: it is the newest
# mtime of the watched files once they are known to be as the sync saw them, and only once that
# mtime has settled (a file's mtime comes from the kernel's coarse clock, up to a tick behind
# time.time_ns(), and a change in the same tick would not be newer); otherwise it is the time the
# sync started, and the next prompt's fast path, finding nothing changed, moves it forward.

STAMP_MARGIN_NS = 50_000_000


def hook_stamp_path(environ: Mapping[str, str]) -> str:
    return os.path.join(hook_folder(environ), "stamp")


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
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    os.utime(path, ns=(mtime_ns, mtime_ns))


def _stat(path: str) -> Stat:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return [info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns]  # as compile.system.stat_of


def _stats(paths: Iterable[str], seen: Mapping) -> dict[str, Stat]:
    """Each path's stat, as the sync saw it where it did. Paths inside a missing folder are
    stood for by the outermost missing folder, recorded missing: nothing can appear in it
    without it appearing first. A thousand bound folders that do not exist yet, each with a
    dozen project files a client could read there, are a thousand entries and a stat each."""
    missing: dict[str, bool] = {}

    def folder_missing(folder: str) -> bool:  # folder: absolute and normalised, as the paths are
        known = missing.get(folder)
        if known is None:
            parent = folder.rpartition("/")[0] or "/"  # os.path.dirname costs three times as much
            known = missing[folder] = (parent != folder and folder_missing(parent)) or not os.path.isdir(folder)
        return known

    def outermost_missing(folder: str) -> str:
        parent = folder.rpartition("/")[0] or "/"
        return outermost_missing(parent) if parent != folder and folder_missing(parent) else folder

    stats: dict[str, Stat] = {}
    for path in sorted(set(paths)):
        folder = path.rpartition("/")[0] or "/"
        if path in seen:
            stats[path] = list(seen[path]) if seen[path] else None
        elif folder_missing(folder):
            stats[outermost_missing(folder)] = None
        else:
            stats[path] = _stat(path)
    return stats


def fingerprint(
    model: str,
    files: Iterable[str],
    present: Iterable[str],
    binaries: Iterable[str],
    variables: Iterable[str],
    environ: Mapping[str, str],
    version: str,
    observed: Mapping | None = None,
    slices: Mapping[str, dict] | None = None,
    said: Iterable[str] = (),
) -> dict:
    """``observed``: stats as the sync saw them (path -> (mtime_ns, size, inode, ctime_ns) or
    None), which win over a stat taken now: a client that rewrote its file since must make the
    next sync look. ``slices``: per client file, what `entries_slice` needs and what it gave."""
    seen = observed or {}
    return {
        "version": version,
        "python": sys.version,
        "model": model,
        "variables": {name: environ.get(name) for name in sorted(set(variables) | set(locations.VARIABLES))},
        "files": _stats(files, seen),
        "present": {path: os.path.lexists(path) for path in sorted(set(present))},
        "binaries": {name: locations.on_path(name, environ) for name in sorted(set(binaries))},
        "slices": dict(slices or {}),
        "said": list(said),  # what that sync said of the state it left (the drift it kept): the fast path says it again
    }


def entries_slice(text: str, format: str, parts: list[dict]) -> str | None:
    """What a client file says about projector's entries, as canonical JSON: for each of
    projector's parts of it (``key``, ``scopes``, ``names``: Codex's config.toml has its servers
    and the trust of projector's hook groups), the entries named ``names`` under ``key`` (and
    whether ``key`` is there), and under each per-folder scope. The file is parsed once. None
    when the standard library cannot read it (JSONC with comments): then a changed stat means a
    full sync."""
    import json  # here: only a client file whose stat moved needs it (json brings re)

    try:
        data = _parsed(text.removeprefix("\ufeff"), format)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    picked = [_part_slice(data, part["key"], part["scopes"], part["names"]) for part in parts]
    return json.dumps(picked, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _part_slice(data: dict, key: list[str], scopes: list[list[str]], names: list[str]) -> dict[str, object]:
    """One part's entries: those named ``names`` under ``key`` ("": the key's own value when it is
    no table), and per per-folder scope (``container[folder]``) those it holds."""
    wanted = set(names)
    servers = _at(data, key)
    picked: dict[str, object] = {"": {n: v for n, v in servers.items() if n in wanted} if isinstance(servers, dict) else servers}
    if scopes:
        from projector.core.keys import scope_keys

        for scope in scope_keys(scopes, lambda path: _at(data, path)):
            inner = _at(data, scope.key)
            chosen = {n: v for n, v in inner.items() if n in wanted} if isinstance(inner, dict) else {}
            if chosen:
                picked[f"{'.'.join(scope.container)}[{scope.folder}]"] = chosen
    return picked


def _parsed(text: str, format: str) -> object:
    import json

    if format == "toml":
        import tomllib

        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(str(error)) from None
    return json.loads(text) if text.strip() else {}


def _at(value: object, key: Iterable[str]) -> object:
    for step in key:
        if step[:1] == "[":  # "[FIELD]": a list of tables named by FIELD, read as a map by name
            from projector.core.keys import list_field, named_entries

            field = list_field(step)
            return named_entries(value, field) if field is not None else None  # (None for anything but a list)
        if not isinstance(value, dict) or step not in value:
            return None
        value = value[step]
    return value


def record(model: str, fingerprint_data: dict, environ: Mapping[str, str]) -> None:
    """Remember what this sync depended on (called after a sync that left nothing pending)."""
    from pathlib import Path

    from projector.core import files

    files.write_bytes(Path(fingerprint_path(model, environ)), marshal.dumps(fingerprint_data))


def forget(model: str, environ: Mapping[str, str]) -> None:
    try:
        os.unlink(fingerprint_path(model, environ))
    except OSError:
        pass
