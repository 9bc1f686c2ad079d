"""Reading and writing client files without ever leaving one half-written.

A write goes to a temporary file in the same folder, is flushed to disk, and replaces the old
file by rename, so a reader sees the old bytes or the new ones, never a mix. The replacement is
a compare-and-swap against what projector read: on Linux the new file is swapped in with
renameat2(RENAME_EXCHANGE), the bytes it displaced are checked, and if the client wrote in the
meantime they are swapped back; a new file is linked into place only if none appeared. The
caller then redoes its merge on the client's content, so a client's write is never lost. The mode of an existing file is
kept (a new file is 0600: it may hold references to secrets); a symlinked file (dotfile managers)
is written through to its target and stays a link; a read-only file is left alone.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from projector.core.record import Record

BOM = "\ufeff"


class ChangedMeanwhile(Exception):
    """The file changed between projector's read and its write; nothing was replaced."""


class Busy(Exception):
    """Another projector sync holds the lock."""


class Read(Record):
    """A file's text and whether it began with a byte order mark."""

    text: str | None  # None: the file does not exist
    bom: bool = False


def read_text(path: Path) -> Read:
    """The file's text (a UTF-8 byte order mark is set aside and restored on write)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        _refuse_dangling(path)
        return Read(None)
    if stat.S_ISDIR(info.st_mode):
        raise OSError("is a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise OSError("is not a regular file")
    try:
        raw = path.read_bytes()
    except PermissionError:
        raise OSError("cannot be read (permission denied)") from None
    text = raw.decode("utf-8")
    if text.startswith(BOM):
        return Read(text[len(BOM) :], bom=True)
    return Read(text)


def _refuse_dangling(path: Path) -> None:
    """A symlink to nothing is not an absent file: writing through it would create its target,
    and folders up to it, wherever it points (as for any other odd file, leave it to the user)."""
    if path.is_symlink():
        raise OSError(f"is a symbolic link to {os.readlink(path)}, which does not exist (fix or remove the link)")


def current_text(path: Path) -> str | None:
    """The file's text as read_text gives it, for comparing with what was read before."""
    return read_text(path).text


def write_text(path: Path, text: str, bom: bool = False, expected: str | None | bool = False, locked: bool = False) -> os.stat_result:
    """Replace ``path`` with ``text``. With ``expected`` (the text read before; None: absent)
    the file must still hold exactly that just before the rename, or ChangedMeanwhile.
    ``locked``: the caller holds the sync lock, so no other projector writes this file now.
    Returns the stat of what was written (taken before the rename, so a client's write right
    after it cannot be mistaken for ours)."""
    return write_bytes(path, ((BOM if bom else "") + text).encode("utf-8"), expected, locked)


def write_bytes(path: Path, data: bytes, expected: str | None | bool = False, locked: bool = False) -> os.stat_result:
    """``write_text`` for bytes."""
    if not os.path.exists(path):
        _refuse_dangling(Path(path))
    target = Path(os.path.realpath(path))  # through a symlink to its target
    target.parent.mkdir(parents=True, exist_ok=True)
    owner: tuple[int, int] | None = None
    try:
        info = target.stat()
    except FileNotFoundError:
        mode = 0o600
    else:
        mode, owner = stat.S_IMODE(info.st_mode), (info.st_uid, info.st_gid)
        if not mode & 0o222:  # checked by mode bits: root may write anything, the user said no
            raise OSError("is read-only (make it writable to let projector edit it)")
    _remove_leftovers(target, 0.0 if locked else STALE)
    descriptor, temporary = _new_temporary(target)
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
            written = os.fstat(handle.fileno())
        os.chmod(temporary, mode)
        if owner is not None and owner != (os.getuid(), os.getgid()):
            try:
                os.chown(temporary, *owner)  # root syncing someone's file leaves it theirs
            except PermissionError:
                pass
        if expected is False:
            os.replace(temporary, target)
        else:
            _swap_in(temporary, target, expected, path, data)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _sync_folder(target.parent)
    return written


TEMPORARY = ".projector-tmp"


def _new_temporary(target: Path) -> tuple[int, str]:
    """A new file beside ``target`` that no one else has, open for writing (tempfile.mkstemp's
    contract, without importing tempfile, shutil, random and the compression modules it pulls in)."""
    while True:
        name = os.path.join(target.parent, f".{target.name}.{os.urandom(6).hex()}{TEMPORARY}")
        try:
            return os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600), name
        except FileExistsError:
            continue


STALE = 600.0  # seconds after which a temporary file without the lock is a killed writer's


def _remove_leftovers(target: Path, older_than: float) -> None:
    """Temporary files of a writer that was killed (ours by name). Without the sync lock another
    projector (a bridge caching the model, a `projector trust`) may be writing one right now:
    only old ones go."""
    import time

    prefix = f".{target.name}."
    try:
        names = os.listdir(target.parent)  # not Path.glob: it compiles a regex for every file's name
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(TEMPORARY) and len(name) >= len(prefix) + len(TEMPORARY)):
            continue
        leftover = target.parent / name
        try:
            if older_than and time.time() - leftover.stat().st_mtime < older_than:
                continue
            leftover.unlink()
        except OSError:
            pass


def _swap_in(temporary: str, target: Path, expected: str | None, shown: Path, ours: bytes) -> None:
    if expected is None:  # a new file: only if nobody created one meanwhile
        try:
            os.link(temporary, target)
        except FileExistsError:
            raise ChangedMeanwhile(str(shown)) from None
        os.unlink(temporary)
        return
    if current_text(target) != expected:
        raise ChangedMeanwhile(str(shown))
    if not _exchange(temporary, target):
        os.replace(temporary, target)  # no atomic exchange here: the check above is the guard
        return
    if read_text(Path(temporary)).text != expected:  # the client wrote between check and swap
        _swap_back(temporary, target, ours)
        raise ChangedMeanwhile(str(shown))
    os.unlink(temporary)


def _swap_back(temporary: str, target: Path, ours: bytes) -> None:
    """Put back the client's write that our exchange displaced. If the client wrote yet again
    in between, what the swap takes out is not ours but its newest write: that goes back in."""
    _exchange(temporary, target)
    if Path(temporary).read_bytes() != ours:
        _exchange(temporary, target)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(first: str, second: Path) -> bool:
    """Atomically swap two paths (Linux renameat2); False where the system cannot."""
    renameat2 = getattr(_libc(), "renameat2", None)
    if renameat2 is None:
        return False
    result = renameat2(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(str(second)), _RENAME_EXCHANGE)
    if result == 0:
        return True
    import ctypes

    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(second))


def _libc():
    global _LIBC
    if _LIBC is None:
        import ctypes  # here: only a write that swaps needs it

        _LIBC = ctypes.CDLL(None, use_errno=True)
    return _LIBC


_LIBC = None


def remove(path: Path, expected: str | None | bool = False) -> None:
    target = Path(os.path.realpath(path))
    if expected is not False and current_text(target) != expected:
        raise ChangedMeanwhile(str(path))
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


def flock_within(descriptor: int, timeout: float, poll: float = 0.05) -> bool:
    """An exclusive flock(2) on ``descriptor``, waited for at most ``timeout`` seconds (asked
    again every ``poll``); False when another holder kept it that long."""
    import fcntl
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll)


@contextlib.contextmanager
def exclusive(path: Path, timeout: float) -> Iterator[None]:
    """A lock file projector's writers take turns on (one for a whole sync, one for the trust
    store); Busy when another holds it longer than ``timeout``. An flock(2) on the file, as
    filelock takes it (a projector of an older version waits for this one, and the other way
    round); the file stays, so every waiter locks the same inode."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        if not flock_within(descriptor, timeout):
            raise Busy(str(path))
        try:
            yield
        finally:
            fcntl.flock(descriptor, fcntl.LOCK_UN)
    finally:
        os.close(descriptor)
