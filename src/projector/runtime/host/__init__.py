"""One server per workspace, shared by the workspace's sessions (``shared: true``).

- ``address``: a host's key (the workspace and a hash of what would run) and its private paths;
- ``mux``: how messages of many sessions and one server are routed and rewritten (pure);
- ``daemon``: the host process (``python -m projector.runtime.host``);
- ``attach``: the bridge's side: find or start the host, hand it the session's stdin and
  stdout, and wait; also the queries ``projector ps``, ``stop`` and ``explain`` make.

The socket between a bridge (or a command) and a host carries a greeting, one byte of request
and, for a session, its two file descriptors and its tool rule; never a JSON-RPC message.
"""

from __future__ import annotations

import _socket  # not `socket`: its enums and selectors cost every session's start milliseconds
import os
import struct

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

HELLO = b"projector-host 1\n"  # a host's greeting on every connection it accepts
ATTACH = b"A"  # + the session's tool rule as JSON, if any, + SCM_RIGHTS [stdin, stdout]: the host serves this session
ATTACH_LIMIT = 1 << 16  # bytes of an attach request (a tool rule beyond that is refused by the bridge)
STATUS = b"?"  # one JSON line about the host
STOP = b"X"  # end the host now
SOCKET_PATH_MAX = 103  # bytes: sun_path holds 104 on macOS, 108 on Linux, with a NUL


def peer_uid(connection: _socket.socket) -> int | None:
    """The user at the other end of a Unix socket (``SO_PEERCRED``); None where the system has
    no such option (the 0700 folder is then the only guard)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(_socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid


def at_path(operation: Callable[[str], None], path: str) -> None:
    """``operation`` (a socket's ``bind`` or ``connect``) on ``path``; when ``path`` is longer
    than ``sun_path`` holds, on its bare name from inside its folder (this process has one
    thread: the working folder is put back at once)."""
    if len(os.fsencode(path)) <= SOCKET_PATH_MAX:
        operation(path)
        return
    folder, name = os.path.split(path)
    here = os.open(".", getattr(os, "O_PATH", os.O_RDONLY))  # O_PATH: a folder this user may only enter
    try:
        os.chdir(folder)
        operation(name)
    finally:
        os.fchdir(here)
        os.close(here)


def still_named(fd: int, path: str) -> bool:
    """Whether the lock file open as ``fd`` is still the one at ``path``. Whoever holds a start
    lock removes its file before letting go (so no file is left per key ever used): a session
    that got the lock on a file since removed must open ``path`` afresh."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)
