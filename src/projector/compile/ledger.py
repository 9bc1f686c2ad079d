"""projector's own state: per client file, the entries it wrote and a hash of each.

Ownership is decided by this ledger and by content, never by comments or markers in the
client's file (clients rewrite their files and drop comments). The ledger lives in
``$XDG_STATE_HOME/projector/ledger.json`` (``~/.local/state/projector/`` by default).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from projector.core import locations
from projector.core.errors import Problem, ProjectorError
from projector.core.record import Factory, Record

SCHEMA = 2  # 1: 0.3.0's, which recorded a user's entry identical to its own as its own (``unsure``)


def entry_hash(value: Any) -> str:
    """A hash of an entry's meaning: key order and formatting do not count."""
    from projector.core.digest import sha256

    canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return sha256(canonical.encode("utf-8"))[:32]


class FileRecord(Record):
    """What projector owns in one client file."""

    client: str
    entries: Mapping[str, str] = Factory(dict)  # entry name -> entry_hash
    # What projector brought into being and takes away again with its last entry:
    # "file" (the file did not exist), "key" (the servers key did not exist), or None.
    created: str | None = None
    # Only while a sync writes (recorded before its first write): entry name -> hash of what the
    # file held before the edit. A sync killed before its final ledger write leaves this behind,
    # so an entry stays ours whether the kill came before or after its file was written.
    previous: Mapping[str, str] = Factory(dict)
    # Entries whose hand edit the user adopted (`projector adopt`): name -> hash of the entry
    # projector wanted when it was adopted (while it wants the same, the edit stays).
    adopted: Mapping[str, str] = Factory(dict)
    # Entries that were there before projector managed them (the user's, taken over at a sync
    # or by `projector adopt`): name -> {"value": the entry, "text": its bytes in the file, or
    # None}. Given back as they were when projector lets go of them, never deleted.
    taken: Mapping[str, Mapping[str, Any]] = Factory(dict)
    # The entries a sync removed because they shadowed projector's global entry, as ``taken``:
    # in a project file (a repository's) by name, with the file's text before the first of those
    # removals and a hash of the text projector left, so `projector remove` can put the file back
    # byte for byte while nothing else changed it; in a global file's per-folder scopes by the
    # JSON list of their key path and name.
    pruned: Mapping[str, Mapping[str, Any]] = Factory(dict)
    original: str | None = None
    left: str | None = None
    # A hook file: the event lists that were there before projector's group joined them (a
    # user's list, even an empty one, stays when projector's group leaves).
    lists: tuple[str, ...] = ()
    # A hook file: per event projector owns, its list as projector left it, each group's
    # entry_hash, None in projector's group's place. A hand edit that takes projector's
    # dispatcher out of its group leaves that group projector's (drift), found by the groups
    # beside it (hookgroups.placed_by), never a reason to add a second group.
    lineup: Mapping[str, tuple[str | None, ...]] = Factory(dict)
    # Folders projector made to hold a file it created: removed with the file if left empty.
    folders: tuple[str, ...] = ()
    # Entries a ledger of schema 1 (0.3.0) records as projector's though it may have found them
    # there, the user's, identical to what it would write, and kept no original: each is taken
    # over anew, its original kept, at the next sync of its file (engine).
    unsure: tuple[str, ...] = ()

    @property
    def holds(self) -> bool:
        """Whether the ledger must keep this record."""
        return bool(self.entries or self.pruned)

    def owned_in(self, current: Mapping[str, Any] | None) -> dict[str, str]:
        """The entries ours in the file as it is: an entry still holding what an unfinished sync
        was about to replace counts as ours at that content."""
        owned = dict(self.entries)
        for name, before in self.previous.items():
            if current and name in current and entry_hash(current[name]) == before:
                owned[name] = before
        return owned


class Ledger(Record):
    """What projector owns in every client file, by the file's absolute path."""

    files: Mapping[str, FileRecord] = Factory(dict)  # by absolute path

    def record(self, path: Path) -> FileRecord | None:
        return self.files.get(str(path))

    def with_records(self, records: Mapping[str, FileRecord | None]) -> Ledger:
        files = dict(self.files)
        for path, record in records.items():
            if record is None or not record.holds:
                files.pop(path, None)
            else:
                files[path] = record
        return Ledger(files)

    def to_json(self) -> str:
        files = {
            path: {"client": r.client, "entries": dict(sorted(r.entries.items())), "created": r.created}
            | ({"previous": dict(sorted(r.previous.items()))} if r.previous else {})
            | ({"adopted": dict(sorted(r.adopted.items()))} if r.adopted else {})
            | ({"taken": dict(sorted(r.taken.items()))} if r.taken else {})
            | ({"pruned": dict(sorted(r.pruned.items()))} if r.pruned else {})
            | ({"original": r.original, "left": r.left} if r.left is not None else {})
            | ({"lists": list(r.lists)} if r.lists else {})
            | ({"lineup": {event: list(groups) for event, groups in sorted(r.lineup.items())}} if r.lineup else {})
            | ({"folders": list(r.folders)} if r.folders else {})
            | ({"unsure": list(r.unsure)} if r.unsure else {})
            for path, r in sorted(self.files.items())
        }
        return json.dumps({"schema": SCHEMA, "files": files}, indent=2) + "\n"


state_dir = locations.state_dir


def ledger_path(environ: Mapping[str, str]) -> Path:
    return state_dir(environ) / "ledger.json"


def load(path: Path) -> Ledger:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Ledger()
    except (OSError, ValueError) as exc:  # nothing is written, so nothing of the user's is taken for no one's
        where = (getattr(exc, "lineno", None), getattr(exc, "colno", None))
        raise ProjectorError(Problem(str(path), *where, f"projector's ledger cannot be read ({getattr(exc, 'msg', exc)}); nothing was "
                                     "changed: repair it, or move it aside to start afresh (keep it: it holds the originals "
                                     "of your entries projector took over)"))
    if not isinstance(data, dict) or data.get("schema") not in (1, SCHEMA):
        raise ProjectorError(Problem(str(path), None, None, f"ledger schema {data.get('schema') if isinstance(data, dict) else None!r} "
                                     "is not one this projector reads (a newer projector's?); nothing was changed"))
    older = data["schema"] == 1
    return Ledger(
        {
            path: FileRecord(client=r["client"], entries=dict(r["entries"]), created=r.get("created"), previous=dict(r.get("previous") or {}),
                             adopted=dict(r.get("adopted") or {}), taken=dict(r.get("taken") or {}), pruned=dict(r.get("pruned") or {}),
                             original=r.get("original"), left=r.get("left"), lists=tuple(r.get("lists") or ()),
                             lineup={event: tuple(groups) for event, groups in (r.get("lineup") or {}).items()},
                             folders=tuple(r.get("folders") or ()),
                             unsure=_unsure(r) if older else tuple(r.get("unsure") or ()))
            for path, r in data["files"].items()
        }
    )


def _unsure(record: Mapping[str, Any]) -> tuple[str, ...]:
    """A schema-1 record's entries that may be the user's: in a file and key that were there
    before projector (it created neither), with no original kept. (Only server entries are
    taken over anew: a hook group that runs projector's dispatcher is projector's whoever wrote it.)"""
    if record.get("created") is not None:
        return ()
    return tuple(sorted(name for name in record["entries"] if name not in (record.get("taken") or {})))
