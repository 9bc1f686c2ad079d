"""The workspace host: one local server for the sessions of one workspace.

Started by the first session that needs it (``python -m projector.runtime.host``, the launch on
stdin), it forks once more so it is no one's child, makes itself a session and process group of
its own, listens on its Unix socket and starts the server (in its own process group too, so a
stop reaches what the server started). Then one thread, one selector:

- a connection is accepted only from this user (``SO_PEERCRED``) and greeted with ``HELLO``;
  its first byte says what it wants: ``ATTACH`` with the session's stdin and stdout passed along
  (``SCM_RIGHTS``): from then on the host reads and writes the client's own pipes, and the
  connection only tells when the bridge's process has gone; ``STATUS`` gets one JSON line;
  ``STOP`` ends the host now;
- every line is parsed and routed by ``mux.Mux``;
- a session ends when its stdin ends (replies in flight get up to ``DRAIN`` seconds) or its
  bridge's process goes (its requests are cancelled at once);
- with no session for ``linger`` seconds the socket is removed and the server gets SIGTERM, then
  SIGKILL after ``KILL_AFTER`` seconds. A server that exits ends the host: requests in flight get
  an error, sessions are closed (clients start new ones, which start a new host). On Linux the
  server dies with the host even when the host is killed (``_die_with_parent``). An ending host
  removes the start locks and dead sockets of its folder (``sweep``).

Writes never block the loop: what a pipe does not take at once waits in a buffer. The server's
stderr and the host's own lines go to the host's log file.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import selectors
import signal
import socket
import stat
import subprocess
import sys
import time

from projector.runtime.host import ATTACH, ATTACH_LIMIT, HELLO, STATUS, STOP, at_path, peer_uid, still_named
from projector.runtime.host.mux import SERVER, Mux, error

TYPE_CHECKING = False  # the host imports as little as it can: every module is resident memory
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from projector.runtime.host.mux import Out

DRAIN = 5.0  # seconds a session whose stdin ended may still get replies in flight
KILL_AFTER = 5.0  # seconds between SIGTERM and SIGKILL
FLUSH = 1.0  # seconds the last words to a closing session may take
BACKLOG_LIMIT = 64 << 20  # bytes waiting for a client that does not read: past this it is dropped
LOG_KEEP = 1 << 20  # bytes of log kept from the previous run of the same host
READ = 1 << 16
SERVERS_MAX = 4  # per host: one per protocol version its sessions ask for, at most
PR_SET_PDEATHSIG = 1  # linux/prctl.h


class Spec:
    """What the host runs and where; ``env`` is the server's whole environment (it arrives on the
    host's stdin and is never written anywhere)."""

    __slots__ = ("key", "socket", "log", "provider", "workspace", "program", "argv", "cwd", "env", "linger")

    def __init__(self, data: dict[str, Any]):
        self.key: str = data["key"]
        self.socket: str = data["socket"]
        self.log: str = data["log"]
        self.provider: str = data["provider"]
        self.workspace: str = data["workspace"]
        self.program: str = data["program"]
        self.argv: tuple[str, ...] = tuple(data["argv"])
        self.cwd: str = data["cwd"]
        self.env: dict[str, str] = data["env"]
        self.linger: float = data["linger"]


class Server:
    """One server process and the routing of its sessions' messages."""

    __slots__ = ("process", "mux", "inbox", "outbox")

    def __init__(self, process: subprocess.Popen[bytes], workspace: str):
        self.process = process
        self.mux = Mux(workspace)
        self.inbox = bytearray()  # a line from the server not yet ended
        self.outbox = bytearray()  # bytes its stdin has not taken yet

    @property
    def pid(self) -> int:
        return self.process.pid


class Link:
    """One attached session: the client's pipes and the bridge's connection."""

    __slots__ = ("number", "reader", "writer", "control", "pending", "backlog", "drain_until", "reading", "server", "tools")

    def __init__(self, number: int, reader: int, writer: int, control: socket.socket):
        self.number = number
        self.reader = reader  # the client's stdin
        self.writer = writer  # the client's stdout
        self.control = control  # the bridge's connection: it closes when the bridge's process goes
        self.pending = bytearray()  # a line not yet ended
        self.backlog = bytearray()  # bytes the client's pipe has not taken yet
        self.drain_until: float | None = None  # stdin ended: closed when replies are out or at this time
        self.reading = True  # its stdin has not ended
        self.server: Server | None = None  # the server it talks to, chosen by its first message
        self.tools: Any = None  # its folder's tool rule (core.tools), as its bridge attached it; None: every tool


def encode(message: dict[str, Any]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def lines(buffer: bytearray, data: bytes) -> list[bytes]:
    """The complete lines in ``buffer`` + ``data``; the rest stays in ``buffer``."""
    buffer += data
    end = buffer.rfind(b"\n")
    if end < 0:
        return []
    complete = bytes(buffer[: end + 1])
    del buffer[: end + 1]
    return [line for line in complete.split(b"\n") if line.strip()]


def parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8").lstrip("\ufeff"))
    except (UnicodeDecodeError, ValueError) as problem:
        return problem


class Host:
    def __init__(self, spec: Spec):
        self.spec = spec
        self.selector = selectors.DefaultSelector()
        self.links: dict[int, Link] = {}
        self.numbers = itertools.count(1)
        self.greeted: set[socket.socket] = set()  # accepted, waiting for their first byte
        self.listener: socket.socket | None = None
        self.inode = 0
        self.servers: list[Server] = []  # the first one started with the host; others for older protocol versions
        self.started = time.time()
        self.linger_until: float | None = time.monotonic() + max(spec.linger, 5.0)  # the starting session attaches first
        self.ending: str | None = None  # why the host is ending

    # ------------------------------------------------------------------ start

    def listen(self) -> None:
        """Bind the socket (a stale one from a crashed host is replaced: whoever starts a host
        holds the start lock and has found nothing answering there)."""
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            os.unlink(self.spec.socket)
        except FileNotFoundError:
            pass
        old = os.umask(0o177)
        try:
            at_path(listener.bind, self.spec.socket)
        finally:
            os.umask(old)
        os.chmod(self.spec.socket, 0o600)
        listener.listen(64)
        listener.setblocking(False)
        self.inode = os.lstat(self.spec.socket).st_ino
        self.listener = listener
        self.selector.register(listener, selectors.EVENT_READ, self._accept)

    def start_server(self) -> Server:
        spec = self.spec
        process = subprocess.Popen(  # noqa: S603 - the user's declared command
            list(spec.argv),
            executable=spec.program,
            cwd=spec.cwd,
            env=spec.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=2,  # the log
            start_new_session=True,
            close_fds=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509 - one thread
        )
        assert process.stdin is not None and process.stdout is not None
        server = Server(process, spec.workspace)
        os.set_blocking(process.stdin.fileno(), False)
        os.set_blocking(process.stdout.fileno(), False)
        self.selector.register(process.stdout, selectors.EVENT_READ, lambda: self._server_readable(server))
        self.servers.append(server)
        log(f"started {spec.provider} in {spec.workspace}: pid {process.pid}")
        return server

    # ------------------------------------------------------------------ loop

    def run(self) -> None:
        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        signal.set_wakeup_fd(wake_w.fileno(), warn_on_full_buffer=False)
        self.selector.register(wake_r, selectors.EVENT_READ, lambda: wake_r.recv(512))
        for name in ("SIGTERM", "SIGINT"):
            signal.signal(getattr(signal, name), lambda *_: self._end("stopped by a signal"))
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        while self.ending is None:
            for key, _events in self.selector.select(self._timeout()):
                key.data()
                if self.ending is not None:
                    break
            self._timers()
        self._finish()

    def _timeout(self) -> float | None:
        deadlines = [link.drain_until for link in self.links.values() if link.drain_until is not None]
        if self.linger_until is not None:
            deadlines.append(self.linger_until)
        return max(0.0, min(deadlines) - time.monotonic()) if deadlines else None

    def _timers(self) -> None:
        now = time.monotonic()
        for link in list(self.links.values()):
            if link.drain_until is not None and now >= link.drain_until:
                self._close(link)
        if self.linger_until is not None and now >= self.linger_until and not self.links:
            if self.greeted:  # a session is between greeting and attaching: give it a moment
                self.linger_until = now + 1.0
            else:
                self._end(f"no session for {self.spec.linger:g} s")

    def _end(self, why: str) -> None:
        if self.ending is None:
            self.ending = why

    # ------------------------------------------------------------------ connections

    def _accept(self) -> None:
        assert self.listener is not None
        while True:
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as problem:
                log(f"accept failed: {problem}")
                return
            uid = peer_uid(connection)
            if uid is not None and uid != os.geteuid():
                log(f"refused a connection from uid {uid} (only uid {os.geteuid()} may attach)")
                connection.close()
                continue
            try:
                connection.sendall(HELLO)
            except OSError:
                connection.close()
                continue
            connection.setblocking(False)
            self.greeted.add(connection)
            self.selector.register(connection, selectors.EVENT_READ, lambda c=connection: self._asked(c))

    def _asked(self, connection: socket.socket) -> None:
        self.greeted.discard(connection)
        self.selector.unregister(connection)
        try:
            what, fds, _flags, _address = socket.recv_fds(connection, ATTACH_LIMIT, 2)
        except OSError:
            what, fds = b"", []
        if what[:1] == ATTACH and len(fds) == 2:
            self._attach(connection, fds[0], fds[1], _tool_rule(what[1:]))  # from here on, the session's faults are its own
            return
        for fd in fds:
            os.close(fd)
        try:
            connection.setblocking(True)
            if what[:1] == STATUS:
                connection.sendall(encode(self.status()))
            elif what[:1] == STOP:
                connection.sendall(encode({"stopping": self.status()}))
                self._end("stopped by `projector stop`")
        except OSError:
            pass
        connection.close()

    def status(self) -> dict[str, Any]:
        spec = self.spec
        return {
            "pid": os.getpid(),
            "server_pid": self.servers[0].pid if self.servers else None,
            "servers": [
                {"pid": server.pid, "protocol": server.mux.version(), "sessions": sum(link.server is server for link in self.links.values())}
                for server in self.servers
            ],
            "provider": spec.provider,
            "workspace": spec.workspace,
            "key": spec.key,
            "command": spec.argv[0] if spec.argv else spec.program,
            "sessions": len(self.links),
            "started": self.started,
            "linger": spec.linger,
            "log": spec.log,
        }

    # ------------------------------------------------------------------ sessions

    def _attach(self, control: socket.socket, reader: int, writer: int, tools: Any = None) -> None:
        link = Link(next(self.numbers), reader, writer, control)
        os.set_blocking(reader, False)
        os.set_blocking(writer, False)
        self.links[link.number] = link
        link.tools = tools
        self.linger_until = None
        self.selector.register(control, selectors.EVENT_READ, self._guarded(link, self._close))  # EOF: its process has gone
        read = self._guarded(link, self._session_readable)
        if not self._watch(reader, selectors.EVENT_READ, read):
            while link.reading and link.number in self.links:  # a file or /dev/null: it never blocks, read it all
                read()

    def _guarded(self, link: Link, work: Callable[[Link], None]) -> Callable[[], None]:
        """``work`` for one session: whatever goes wrong there ends that session, not the host."""

        def run() -> None:
            try:
                work(link)
            except Exception as problem:  # noqa: BLE001 - isolate the other sessions from this one's fault
                log(f"session {link.number} failed ({problem!r}): closed")
                try:
                    self._close(link)
                except Exception:  # noqa: BLE001 - already half closed
                    self.links.pop(link.number, None)

        return run

    def _watch(self, fd: int, events: int, callback: Callable[[], None]) -> bool:
        """Poll ``fd``; False when no poller takes it (a regular file, /dev/null)."""
        try:
            self.selector.register(fd, events, callback)
        except PermissionError:
            return False
        return True

    def _session_readable(self, link: Link) -> None:
        if link.number not in self.links:  # closed earlier in the same round of events
            return
        try:
            data = os.read(link.reader, READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._stdin_ended(link)
            return
        for line in lines(link.pending, data):
            message = parse(line)
            if isinstance(message, Exception):
                self._deliver([(link.number, error(None, -32700, f"Parse error: {message}"))])
            else:
                server = link.server or self._choose_server(link, message)
                self._deliver(server, server.mux.from_session(link.number, message))

    def _choose_server(self, link: Link, first: Any) -> Server:
        """The server of a session, by its first message: a server that speaks the protocol
        version its ``initialize`` asks for (or an older one it accepts), else a server of its
        own (a client is never refused for its version), up to ``SERVERS_MAX``."""
        params = first.get("params") if isinstance(first, dict) and first.get("method") == "initialize" else None
        asked = params.get("protocolVersion") if isinstance(params, dict) else None
        server = next((s for s in self.servers if asked is None or s.mux.serves(asked)), None)
        if server is None and len(self.servers) < SERVERS_MAX:
            spoken = ", ".join(str(s.mux.version()) for s in self.servers)
            try:
                server = self.start_server()
                log(f"session {link.number} asks for protocol version {asked}, older than the running server's ({spoken}): "
                    f"pid {server.pid} is its own, shared with the sessions that ask for the same")
            except OSError as problem:
                log(f"session {link.number}: a server for protocol version {asked} did not start ({problem})")
        if server is None:
            server = self.servers[0]  # its mux explains the refusal
        link.server = server
        server.mux.attach(link.number, link.tools)
        _tell(link, f"server {server.pid}\n")  # the waiter's to end should this host be killed (attach.WAITER)
        return server

    def _stdin_ended(self, link: Link) -> None:
        link.reading = False
        try:
            self.selector.unregister(link.reader)
        except (KeyError, ValueError):
            pass  # never polled
        if link.server is not None and link.server.mux.in_flight(link.number):
            link.drain_until = time.monotonic() + DRAIN
        else:
            self._close(link)

    def _close(self, link: Link) -> None:
        """End a session: its requests still at the server are cancelled there."""
        if self.links.pop(link.number, None) is None:
            return
        if link.server is not None:
            self._deliver(link.server, link.server.mux.detach(link.number))
        self._flush(link, time.monotonic() + FLUSH)
        for fd in (link.reader, link.writer):
            try:
                self.selector.unregister(fd)
            except (KeyError, ValueError):
                pass
            os.close(fd)
        self.selector.unregister(link.control)
        _tell(link, "bye\n")  # a close of the host's own: its server is not to be taken down
        link.control.close()
        if not self.links and self.ending is None:
            self.linger_until = time.monotonic() + self.spec.linger

    def _flush(self, link: Link, until: float) -> None:
        """What the closing session is still owed, within ``until``."""
        while link.backlog and time.monotonic() < until:
            try:
                del link.backlog[: os.write(link.writer, link.backlog)]
            except BlockingIOError:
                time.sleep(0.005)
            except OSError:
                return

    # ------------------------------------------------------------------ routing

    def _deliver(self, server: Server, outs: list[Out]) -> None:
        for destination, message in outs:
            if destination == SERVER:
                self._to_server(server, encode(message))
            elif (link := self.links.get(destination)) is not None:
                self._to_session(link, encode(message))
                if link.drain_until is not None and not server.mux.in_flight(link.number):
                    self._close(link)

    def _to_session(self, link: Link, data: bytes) -> None:
        if not link.backlog:
            try:
                data = data[os.write(link.writer, data):]
            except BlockingIOError:
                pass
            except OSError:  # the client has gone
                self._close(link)
                return
            if not data:
                return
            if not self._watch(link.writer, selectors.EVENT_WRITE, self._guarded(link, self._session_writable)):
                log(f"session {link.number}: its output took part of a reply and cannot be waited on: closed")
                self._close(link)
                return
        link.backlog += data
        if len(link.backlog) > BACKLOG_LIMIT:
            log(f"session {link.number} does not read its replies: closed")
            link.backlog.clear()
            self._close(link)

    def _session_writable(self, link: Link) -> None:
        if link.number not in self.links:
            return
        try:
            del link.backlog[: os.write(link.writer, link.backlog)]
        except BlockingIOError:
            return
        except OSError:
            link.backlog.clear()
            self._close(link)
            return
        if not link.backlog:
            self.selector.unregister(link.writer)

    def _to_server(self, server: Server, data: bytes) -> None:
        pipe = server.process.stdin
        assert pipe is not None
        if not server.outbox:
            try:
                data = data[os.write(pipe.fileno(), data):]
            except BlockingIOError:
                pass
            except OSError:
                return  # it has gone: its stdout's end says so
            if not data:
                return
            self.selector.register(pipe, selectors.EVENT_WRITE, lambda: self._server_writable(server))
        server.outbox += data

    def _server_writable(self, server: Server) -> None:
        pipe = server.process.stdin
        assert pipe is not None
        try:
            del server.outbox[: os.write(pipe.fileno(), server.outbox)]
        except BlockingIOError:
            return
        except OSError:
            server.outbox.clear()
        if not server.outbox:
            self.selector.unregister(pipe)

    def _server_readable(self, server: Server) -> None:
        assert server.process.stdout is not None
        try:
            data = os.read(server.process.stdout.fileno(), READ)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._server_gone(server)
            return
        for line in lines(server.inbox, data):
            message = parse(line)
            if isinstance(message, Exception):
                log(f"the server wrote a line that is not JSON ({message}): dropped")
            else:
                self._deliver(server, server.mux.from_server(message))

    def _server_gone(self, server: Server) -> None:
        """A server exited: its requests in flight get an error and its sessions are closed; the
        host ends with its last server."""
        assert server.process.stdout is not None
        self.selector.unregister(server.process.stdout)
        try:
            status = server.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            status = None  # it closed its stdout but lives on: its stop below ends it
        said = f"exit status {status}" if status is not None and status >= 0 else (
            f"killed by signal {-status}" if status is not None else "its output closed")
        why = f"projector: the shared server of {self.spec.provider} exited ({said}); start a new session"
        log(why)
        self._deliver(server, server.mux.server_gone(why))
        for link in [link for link in self.links.values() if link.server is server]:
            self._close(link)
        self.servers.remove(server)
        if not self.servers:
            self._end(f"the server exited ({said})")
        self._stop_servers([server])

    # ------------------------------------------------------------------ end

    def _finish(self) -> None:
        """Stop listening, close every session (telling each why), stop the server."""
        log(f"ending: {self.ending}")
        self._unlisten()
        for connection in list(self.greeted):
            connection.close()
        for link in list(self.links.values()):
            self._close(link)
        self._stop_servers(self.servers)
        sweep(os.path.dirname(self.spec.socket))

    def _unlisten(self) -> None:
        """Remove the socket, if it is still this host's (a newer host may have replaced a
        path it took for stale), and stop listening."""
        if self.listener is None:
            return
        try:
            if os.lstat(self.spec.socket).st_ino == self.inode:
                os.unlink(self.spec.socket)
        except OSError:
            pass
        self.selector.unregister(self.listener)
        self.listener.close()
        self.listener = None

    def _stop_servers(self, servers: list[Server]) -> None:
        """SIGTERM to each server's process group, SIGKILL to those still there ``KILL_AFTER``
        seconds later."""
        for server in servers:
            pipe = server.process.stdin
            if pipe is not None:
                with contextlib.suppress(KeyError, ValueError):
                    self.selector.unregister(pipe)
                with contextlib.suppress(OSError):
                    pipe.close()
            if server.process.poll() is None:
                _signal_group(server.pid, signal.SIGTERM)
        deadline = time.monotonic() + KILL_AFTER
        for server in servers:
            try:
                server.process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log(f"the server did not stop within {KILL_AFTER:g} s of SIGTERM: SIGKILL")
                _signal_group(server.pid, signal.SIGKILL)
                server.process.wait()
            _signal_group(server.pid, signal.SIGKILL)  # anything it started and left behind
            log(f"server pid {server.pid} ended ({server.process.returncode})")


def _tell(link: Link, line: str) -> None:
    """A line to the session's waiter (see attach.WAITER); a waiter that has gone hears nothing."""
    with contextlib.suppress(OSError):
        link.control.send(line.encode("ascii"))


def _die_with_parent() -> None:
    """In the server's process before its exec: the kernel kills it when the host ends, however
    the host ends. A host that is SIGKILLed runs no code, so its own stop cannot reach a server
    that ignores its stdin's end (it stayed with parent 1, out of `ps`'s and `stop`'s sight);
    a parent-death signal needs no process of its own, unlike a watcher holding a pipe. SIGKILL,
    as such a server may ignore SIGTERM too. What the server started is taken down by the
    sessions' waiters (attach.WAITER), when any is attached."""
    import ctypes

    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL) != 0:
        return  # no such call here: the host's own stop is the only one
    if os.getppid() != parent:  # the host ended before the signal was asked for
        os._exit(1)


def sweep(folder: str) -> None:
    """Remove start locks no session holds and sockets no host listens on (a crashed host's, or
    one from before a reboot: the state folder outlives both). Each is judged holding the key's
    start lock, which a starting host's session holds from before the bind to after the listen."""
    import fcntl

    try:
        names = os.listdir(folder)
    except OSError:
        return
    keys = {name.rsplit(".", 1)[0] for name in names if name.endswith((".lock", ".sock"))}
    for key in keys:
        lock = os.path.join(folder, f"{key}.lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # a session holds it: that key is starting
            os.close(fd)
            continue
        try:
            if still_named(fd, lock):
                _remove_if_dead(os.path.join(folder, f"{key}.sock"))
                os.unlink(lock)
        except OSError:
            pass
        finally:
            os.close(fd)


def _remove_if_dead(path: str) -> None:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        if not stat.S_ISSOCK(os.lstat(path).st_mode):
            return
        at_path(probe.connect, path)
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    except OSError:
        pass  # a host that is busy (its backlog full) or a path that cannot be tried: kept
    finally:
        probe.close()


def _signal_group(pid: int, signum: int) -> None:
    try:
        os.killpg(pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def log(message: str) -> None:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    try:
        os.write(2, f"{stamp} projector host[{os.getpid()}]: {message}\n".encode())
    except OSError:
        pass


# --------------------------------------------------------------------------- process


def _open_log(path: str) -> int:
    """The host's log, the previous run's tail kept when it grew large."""
    try:
        if os.path.getsize(path) > LOG_KEEP:
            os.replace(path, path + ".1")
    except OSError:
        pass
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)


def _detach(log_path: str) -> None:
    """No terminal, no pipe of the session that started it: stdin and stdout /dev/null, stderr
    the log; a session and process group of its own."""
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.dup2(_open_log(log_path), 2)
    os.close(null)
    sys.stdout = sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115 - the process's stderr


def main() -> None:
    """Read the launch from stdin, fork the host, print ``ready <pid>`` (or ``error: ...``) once
    it listens, and leave it running."""
    spec = Spec(json.loads(sys.stdin.buffer.read()))
    ready_r, ready_w = os.pipe()
    if os.fork():
        os.close(ready_w)
        said = b""
        while chunk := os.read(ready_r, 4096):
            said += chunk
        sys.stdout.write(said.decode("utf-8", "replace") or "error: the host ended before it listened\n")
        sys.stdout.flush()
        os._exit(0 if said.startswith(b"ready") else 1)
    os.close(ready_r)
    try:
        _detach(spec.log)
        host = Host(spec)
        host.listen()
        host.start_server()
    except OSError as problem:
        os.write(ready_w, f"error: {problem.strerror or problem} ({getattr(problem, 'filename', None) or spec.program})\n".encode())
        os._exit(1)
    os.write(ready_w, f"ready {os.getpid()}\n".encode())
    os.close(ready_w)
    try:
        host.run()
    except Exception as problem:  # noqa: BLE001 - the server must not outlive a broken host
        log(f"internal error: {problem!r}")
        host._unlisten()
        host._stop_servers(host.servers)
        os._exit(1)
    os._exit(0)


def _tool_rule(said: bytes) -> Any:
    """The session's tool rule (core.tools) as its bridge sent it with the attach; None: none.
    A rule that cannot be read hides every tool: the session must not see more than it may."""
    if not said:
        return None
    from projector.core.tools import ToolRule, rule

    try:
        found = rule(json.loads(said))
    except ValueError:
        found = None
    return found if found is not None else ToolRule(allow=())
