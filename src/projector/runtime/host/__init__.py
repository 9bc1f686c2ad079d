"""One server per workspace, shared by the workspace's sessions (``shared: true``).

- ``address``: a host's key (the workspace and a hash of what would run) and its private paths;
- ``mux``: how messages of many sessions and one server are routed and rewritten (pure);
- ``daemon``: the host process (``python -m projector.runtime.host``);
- ``attach``: the bridge's side: find or start the host, hand it the session's stdin and
  stdout, and wait; also the queries ``projector ps``, ``stop`` and ``explain`` make.

The socket between a bridge (or a command) and a host carries a greeting, one byte of request
and, for a session, its two file descriptors and its tool rule; never a JSON-RPC message.
"""

import _socket  # not `socket`: its enums and selectors cost every session's start milliseconds
import struct

HELLO = b"projector-host 1\n"  # a host's greeting on every connection it accepts
ATTACH = b"A"  # + the session's tool rule as JSON, if any, + SCM_RIGHTS [stdin, stdout]: the host serves this session
ATTACH_LIMIT = 1 << 16  # bytes of an attach request (a tool rule beyond that is refused by the bridge)
STATUS = b"?"  # one JSON line about the host
STOP = b"X"  # end the host now


def peer_uid(connection: _socket.socket) -> int | None:
    """The user at the other end of a Unix socket (``SO_PEERCRED``); None where the system has
    no such option (the 0700 folder is then the only guard)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", connection.getsockopt(_socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid
