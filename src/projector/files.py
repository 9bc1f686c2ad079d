"""Reading and writing client files without ever leaving one half-written.

A write goes to a temporary file in the same folder, is flushed to disk, and replaces the old
file by rename, so a reader sees the old bytes or the new ones, never a mix. The mode of an
existing file is kept (a new file is 0600: it may hold references to secrets); a symlinked file
(dotfile managers) is written through to its target and stays a link.
"""

from __future__ import annotations

import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path

BOM = "\ufeff"


@dataclass(frozen=True)
class Read:
    text: str | None  # None: the file does not exist
    bom: bool = False


def read_text(path: Path) -> Read:
    """The file's text (a UTF-8 byte order mark is set aside and restored on write)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return Read(None)
    except IsADirectoryError:
        raise OSError(f"is a folder, not a file") from None
    except PermissionError:
        raise OSError("cannot be read (permission denied)") from None
    text = raw.decode("utf-8")
    if text.startswith(BOM):
        return Read(text[len(BOM) :], bom=True)
    return Read(text)


def write_text(path: Path, text: str, bom: bool = False) -> None:
    target = Path(os.path.realpath(path))  # through a symlink to its target
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o600
    data = ((BOM if bom else "") + text).encode("utf-8")
    descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".projector-tmp")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _sync_folder(target.parent)


def remove(path: Path) -> None:
    target = Path(os.path.realpath(path))
    try:
        target.unlink()
    except FileNotFoundError:
        return
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable."""
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)
