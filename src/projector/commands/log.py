"""`projector log`: the last syncs, each with when it ran, what started it and what it did.

The shell hook is quiet, so each full sync (by the hook or by hand; the fast path's "nothing to
do" is no sync) appends one line of JSON to ``$XDG_STATE_HOME/projector/sync-log.jsonl``; the
file keeps the last ``KEPT`` of them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path

from projector.core import files
from projector.core.errors import display_path
from projector.core.locations import home, on_path, state_dir

KEPT = 200
SCHEMA = 1


def log_path(environ: Mapping[str, str]) -> Path:
    return state_dir(environ) / "sync-log.jsonl"


def _lines(path: Path) -> list[str]:
    """The log's lines; none when it is missing or unreadable."""
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []


def append(environ: Mapping[str, str], entry: dict) -> None:
    """One sync's line, the oldest dropped beyond KEPT (the file is rewritten whole, atomically)."""
    path = log_path(environ)
    lines = [*_lines(path), json.dumps({"schema": SCHEMA, **entry}, ensure_ascii=False)][-KEPT:]
    try:
        files.write_text(path, "".join(line + "\n" for line in lines))
    except OSError:
        pass  # a log is worth no failed sync


def hook_trigger(environ: Mapping[str, str]) -> str:
    """Why the shell hook started this sync: the first line of its watch list that no longer
    holds, as the hook reads it (shell/), in words. Called before the sync rewrites them."""
    from projector.core import fingerprint

    folder = fingerprint.hook_folder(environ)
    shown = lambda path: display_path(path, home(environ))  # noqa: E731 - one short formatter
    try:
        stamp = os.stat(os.path.join(folder, "stamp")).st_mtime_ns
        with open(os.path.join(folder, "watch"), encoding="utf-8") as handle:
            watch = handle.read().splitlines()
    except OSError:
        return "the first prompt with this model (nothing watched yet)"
    for line in watch:
        kind, rest = line[:1], line[1:]
        if kind == "+" and (not os.path.exists(rest) or os.stat(rest).st_mtime_ns > stamp):
            return f"{shown(rest)} changed" if os.path.exists(rest) else f"{shown(rest)} is gone"
        if kind == "^" and not os.path.lexists(rest):
            return f"{shown(rest)} is gone"
        if kind == "-" and os.path.lexists(rest):
            return f"{shown(rest)} appeared"
        if kind == "%":
            place, *names = rest.split("\t")
            found = [name for name in names if os.path.lexists(os.path.join(place, name))]
            if found and os.path.exists(place) and os.stat(place).st_mtime_ns > stamp:
                return f"{shown(os.path.join(place, found[0]))} appeared"
        if kind == "@" and (on_path("projector", environ) or "") != rest:
            return "projector is elsewhere on PATH"
        if kind == "=" and environ.get(rest.partition("=")[0]) != rest.partition("=")[2]:
            return f"${rest.partition('=')[0]} changed"
        if kind == "!" and rest in environ:
            return f"${rest} was set"
    return "a change the hook saw (gone again by the time the sync looked)"


def entry(trigger: str, why: str, model: str, changes: list[str], kept: list[str], errors: list[str]) -> dict:
    return {"when": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime()), "trigger": trigger, "why": why,
            "model": model, "changes": changes, "kept": kept, "errors": errors}


def run(count: int, as_json: bool) -> int:
    lines = _lines(log_path(os.environ))
    entries = []
    for line in lines[-count:] if count > 0 else []:
        try:
            entries.append(json.loads(line))
        except ValueError:
            continue
    if as_json:
        print(json.dumps({"schema": SCHEMA, "syncs": entries}, indent=2))
        return 0
    if not entries:
        print(f"no sync yet (each sync adds a line to {display_path(log_path(os.environ))})")
        return 0
    for item in entries:
        print(f"{item['when']}  {item['trigger']}: {item['why']}  ({item['model']})")
        done = item["changes"] + item["kept"] + [f"error: {e}" for e in item["errors"]]
        for line in done or ["nothing to change"]:
            print(f"  {line}")
    return 0
