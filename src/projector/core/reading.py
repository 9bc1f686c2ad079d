"""Reading small files that anyone could have put in a folder (project files, git's files of a
worktree) at every bridge start, without blocking and without filling memory: only a regular
file is opened (a FIFO would block the read, ``/dev/zero`` never ends it), without blocking and
checked again once open, and only up to a bound. Only ``os`` and ``stat`` are imported: the
bridge uses this."""

from __future__ import annotations

import os
import stat


class Unreadable(Exception):
    """Something is at the place that projector does not read; says why."""


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of the regular file at ``path`` (through symlinks); None when there is nothing
    there; Unreadable when it is not a regular file, cannot be read, or holds more than ``limit``."""
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise Unreadable(f"it cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(info.st_mode):
        raise Unreadable("it is not a regular file")
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as exc:
        raise Unreadable(f"it cannot be read ({exc.strerror})") from None
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):  # replaced between the look and the open
            raise Unreadable("it is not a regular file")
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(descriptor, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(descriptor)
    if size > limit:
        raise Unreadable(f"it is larger than {limit // 1024} KiB" if limit >= 1024 else f"it is larger than {limit} bytes")
    return b"".join(chunks)
