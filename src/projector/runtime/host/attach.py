"""The bridge's side of a shared server: find the workspace's host or start it, hand it the
session, and wait.

The host is asked for by connecting to its socket. When nothing answers there, the bridge takes
the host's start lock, asks again (a session racing it may have started one meanwhile) and only
then starts a host, so sessions starting at the same instant get one host. A socket left by a
crashed host refuses connections: the new host replaces it.

Attaching passes the session's stdin and stdout to the host over the socket (``SCM_RIGHTS``):
the host reads and writes the client's own pipes, so no process relays a single message. The
bridge's process must still live as long as the session (clients watch the process they
spawned), so it becomes the smallest waiter there is: ``/bin/sh`` reading the connection, which
the host closes when the session ends. A client that ends the process (SIGTERM, SIGKILL) closes
the connection, and the host cancels that session's requests.
"""

from __future__ import annotations

import _signal  # not `signal`, `contextlib` or `typing`: a second session's start pays for every import
import _socket  # not `socket`: see projector.runtime.host
import json
import os
import struct
import sys
from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

from projector.runtime.host import ATTACH, ATTACH_LIMIT, HELLO, STATUS, STOP, at_path, peer_uid, still_named
from projector.runtime.host.address import (
    Address,
    Unavailable,
    address,
    argv,
    hosts_folder,
    key,
    own_socket,
    private,
    workspace,
)
from projector.runtime.launch import Launch

GREETING_WAIT = 5.0  # seconds a host has to greet a connection before it counts as not answering
START_WAIT = 30.0  # seconds to wait for the start lock and for a host to listen
# Lives until the host closes the connection. The host names the server's process group when it
# picks the session's server and says "bye" before a close of its own: a connection that ends
# without it is a host that was killed, and the waiter takes down what the server started (the
# server itself has a parent-death signal; its children do not).
WAITER = ("/bin/sh", "-c", 'while read -r what group; do case $what in bye) exit 0;; server) g=$group;; esac; done; '
          '[ -z "$g" ] || kill -s KILL -- "-$g" 2>/dev/null; exit 0')


def serve(plan: Launch, folder: str, program: str, environ: dict[str, str],
          overlay: tuple[tuple[str, tuple[str, ...]], ...]) -> NoReturn:
    """Serve this session from the workspace's host; never returns. Unavailable: no host can
    serve it (the caller runs the server itself)."""
    where = address(key(plan, folder, program, environ, overlay), os.environ)
    spec = {
        "key": where.key, "socket": where.socket, "log": where.log, "provider": plan.provider,
        "workspace": workspace(plan, folder), "program": program, "argv": list(argv(plan, program)), "cwd": plan.cwd,
        "env": environ, "linger": plan.linger,
    }
    rule = attached_rule(plan.tools)  # one too large for a host: Unavailable before a host is started for it
    hand_over(connect_or_start(where, spec), plan.provider, rule)


def connect(path: str, wait: float = GREETING_WAIT) -> _socket.socket | None:
    """A connection the host at ``path`` has greeted; None when no host answers there."""
    try:
        own_socket(path)
    except FileNotFoundError:
        return None
    connection = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    connection.settimeout(wait)
    try:
        at_path(connection.connect, path)
        uid = peer_uid(connection)
        if uid is not None and uid != os.geteuid():
            raise Unavailable(f"{path} is served by another user (uid {uid}): it was not used")
        greeting = b""
        while not greeting.endswith(b"\n") and len(greeting) < len(HELLO):
            chunk = connection.recv(len(HELLO) - len(greeting))
            if not chunk:
                break
            greeting += chunk
    except (OSError, Unavailable) as problem:
        connection.close()
        if isinstance(problem, Unavailable):
            raise
        return None  # nothing listens (a crashed host's socket), or it is closing: start another
    if greeting != HELLO:
        connection.close()
        return None
    connection.settimeout(None)
    return connection


def connect_or_start(where: Address, spec: dict[str, Any]) -> _socket.socket:
    for _ in range(3):
        if (connection := connect(where.socket)) is not None:
            return connection
        lock = _start_lock(where.lock)
        try:
            if (connection := connect(where.socket)) is not None:
                return connection
            _start(spec)
        finally:
            _release(lock, where.lock)
    raise Unavailable(f"the host at {where.socket} did not answer after starting")


def _start_lock(path: str) -> int:
    """The start lock's descriptor, locked (``_release`` lets it go)."""
    import time

    from projector.core.files import flock_within

    deadline = time.monotonic() + START_WAIT
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if not flock_within(fd, max(0.0, deadline - time.monotonic()), poll=0.01):
                raise Unavailable(f"another session held {path} for {START_WAIT:g} s")
        except BaseException:
            os.close(fd)
            raise
        if still_named(fd, path):
            return fd
        os.close(fd)  # its holder removed it as it let go: lock the file at the path now


def _release(fd: int, path: str) -> None:
    """Remove the start lock's file, then let go of it (see ``still_named``)."""
    try:
        os.unlink(path)
    except OSError:
        pass
    os.close(fd)


def _start(spec: dict[str, Any]) -> None:
    """Start a host and wait until it listens (it detaches itself: no one waits for it)."""
    import subprocess

    try:
        process = subprocess.Popen(  # noqa: S603 - this interpreter, this package
            [sys.executable, "-m", "projector.runtime.host"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd="/",
            start_new_session=True,
            close_fds=True,
        )
        said, problems = process.communicate(json.dumps(spec).encode("utf-8"), timeout=START_WAIT)
    except (OSError, subprocess.TimeoutExpired) as problem:
        raise Unavailable(f"the host did not start ({problem})") from None
    if not said.startswith(b"ready"):
        why = (said or problems).decode("utf-8", "replace").strip().splitlines()
        raise Unavailable(f"the host did not start: {why[-1] if why else 'no reason given'} (log: {spec['log']})")


def attached_rule(tools: Any) -> bytes:
    """The session's tool rule as the attach carries it (b"": none); Unavailable when it is
    larger than a host takes with a session (the bridge then filters it unshared)."""
    rule = b"" if tools is None else json.dumps({"allow": tools.allow, "deny": tools.deny}).encode("utf-8")
    if len(ATTACH + rule) > ATTACH_LIMIT:
        raise Unavailable(f"its tool rule is larger than the {ATTACH_LIMIT} bytes a host takes with a session")
    return rule


def hand_over(connection: _socket.socket, provider: str, rule: bytes = b"") -> NoReturn:
    """Give the host this session's stdin and stdout (and ``rule``, its folder's tool rule as
    attached_rule encodes it, which the host applies to this session: core.tools), then wait for
    the session's end as a shell reading the connection (the process the client spawned must
    live that long)."""
    try:
        connection.sendmsg([ATTACH + rule], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack("2i", 0, 1))])
    except OSError as problem:  # the host went between its greeting and now: nothing was handed over
        raise Unavailable(f"the host went away ({problem.strerror})") from None
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(connection.fileno(), 0)
    os.dup2(null, 1)  # the client's stdout is the host's now: its end comes from the host alone
    for number in (_signal.SIGPIPE, _signal.SIGXFSZ):  # Python ignores these; the waiter must not inherit that
        _signal.signal(number, _signal.SIG_DFL)
    try:
        os.execv(WAITER[0], [*WAITER, f"projector-mcp-{provider}"])
    except OSError:  # no /bin/sh: wait here instead
        while os.read(0, 1 << 12):
            pass
        os._exit(0)


# --------------------------------------------------------------------------- commands


def ask(path: str, what: bytes, wait: float = 2.0) -> dict[str, Any] | None:
    """One request to the host at ``path`` (STATUS or STOP) and its JSON answer; None when no
    host answers there."""
    try:
        connection = connect(path, wait)
    except Unavailable:
        return None
    if connection is None:
        return None
    try:
        connection.settimeout(wait)
        connection.sendall(what)
        answer = b""
        while chunk := connection.recv(1 << 16):
            answer += chunk
        return json.loads(answer)
    except (OSError, ValueError):
        return None
    finally:
        connection.close()


def hosts(environ: Mapping[str, str]) -> list[dict[str, Any]]:
    """Every host of this user that answers, each with its ``socket``."""
    try:
        folder = private(hosts_folder(environ), create=False)
        names = sorted(name for name in os.listdir(folder) if name.endswith(".sock"))
    except (OSError, Unavailable):
        return []
    found = []
    for name in names:
        path = os.path.join(folder, name)
        if (status := ask(path, STATUS)) is not None:
            found.append({**status, "socket": path})
    return found


def stop(path: str) -> dict[str, Any] | None:
    """Ask the host at ``path`` to end now; its status as it was, None when none answered."""
    answer = ask(path, STOP)
    return answer.get("stopping") if answer else None
