"""The world as the compiler sees it: one narrow seam (chezmoi's ``System``).

``compute`` reads client files through a System and ``write`` carries out its result through
one, so ``diff``, ``status`` and ``sync`` are one code path: sync uses the real system, diff
and status a dry run that reads the same files and only records what would be written. Either
way the system remembers the stat of every file as it was read (taken before its bytes) or as
projector wrote it, so the fast path's fingerprint describes what this sync saw, not what the
disk holds a moment later.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from projector.core import files
from projector.core.record import Factory, Record

Stat = tuple[int, int, int, int] | None  # (mtime_ns, size, inode, ctime_ns); None: absent


def stat_of(path: str) -> Stat:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _key(info)


def _key(info: os.stat_result) -> tuple[int, int, int, int]:
    """What an edit cannot keep: the ctime moves with any change (``touch -r`` sets the mtime back)."""
    return (info.st_mtime_ns, info.st_size, info.st_ino, info.st_ctime_ns)


def _as_written(path: str, written: os.stat_result) -> Stat:
    """The stat of a file projector wrote. The rename that put it in place moved its ctime, so
    the file's own stat is taken, but only if it is still the file written (same inode, mtime and
    size); otherwise a client wrote since, and the stat of projector's write makes the next sync
    look again."""
    now = stat_of(path)
    return now if now is not None and now[:3] == _key(written)[:3] else _key(written)


class System(Protocol):
    observed: dict[str, Stat]

    def read(self, path: Path) -> files.Read: ...

    def write(self, path: Path, text: str, bom: bool = False, expected: str | None | bool = False) -> None:
        """``expected``: what the file held when read (None: absent), checked before the swap;
        False: projector's own file, replaced under the sync lock."""

    def remove(self, path: Path, expected: str | None) -> None: ...

    def remove_empty(self, folders: tuple[str, ...]) -> None:
        """Remove each folder (deepest first) that is empty; stop at the first that is not."""


class RealSystem(Record, frozen=False):
    """The files on disk; remembers the stat of each file it read."""

    observed: dict[str, Stat] = Factory(dict)

    def read(self, path: Path) -> files.Read:
        self.observed[str(path)] = stat_of(str(path))  # before the bytes: a later change shows
        return files.read_text(path)

    def write(self, path: Path, text: str, bom: bool = False, expected: str | None | bool = False) -> None:
        written = files.write_text(path, text, bom=bom, expected=expected, locked=True)
        self.observed[str(path)] = _as_written(str(path), written)
        self._folder_as_left(path)

    def remove(self, path: Path, expected: str | None) -> None:
        files.remove(path, expected=expected)
        self.observed[str(path)] = None
        self._folder_as_left(path)

    def remove_empty(self, folders: tuple[str, ...]) -> None:
        for folder in folders:
            try:
                os.rmdir(folder)
            except OSError:  # not empty (someone's files, or another of projector's), or gone
                return
            self.observed[folder] = None
            self._folder_as_left(Path(folder))

    def _folder_as_left(self, path: Path) -> None:
        """The folder a write or removal changed (a client's folder is watched for the client's
        presence), as projector left it."""
        folder = os.path.dirname(os.path.realpath(path))
        self.observed[folder] = stat_of(folder)


class DryRunSystem(RealSystem, frozen=False):
    """Reads the real files; writes nothing."""

    def write(self, path: Path, text: str, bom: bool = False, expected: str | None | bool = False) -> None:
        pass

    def remove(self, path: Path, expected: str | None) -> None:
        pass

    def remove_empty(self, folders: tuple[str, ...]) -> None:
        pass
