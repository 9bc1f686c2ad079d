"""HTTP/1.1 to the provider with the standard library's ``http.client``.

Keep-alive connections (TCP_NODELAY: http.client sends a request's headers and body in two
writes, which Nagle and delayed ACKs would hold ~40 ms), read as replies arrive so the bridge's
one loop never waits on a slow stream. TLS is set up only for an ``https`` URL, when its first
connection opens (``ssl`` is not even imported before). ``HTTPS_PROXY``/``HTTP_PROXY``/
``ALL_PROXY`` and ``NO_PROXY`` are honoured: https goes through a CONNECT tunnel, plain http
through the proxy in absolute form.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from collections.abc import Mapping

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

from urllib.parse import unquote, urlsplit

from projector.core.record import Record
from projector.runtime.bridge.loop import Interrupted, Loop
from projector.runtime.bridge.response import (
    MAX_LINE,
    Heads,
    ProviderFault,
    Response,
    final_head_in,
    http_client,
    nothing_arrived,
)

CHUNK = 1 << 16
ROUND = 16  # reads of one reply before the loop has its turn again (signals, stdin, other replies)
IO_TIMEOUT = 30.0  # seconds any one connect, send or read may block


class Proxy(Record):
    """An http proxy from the environment."""

    host: str
    port: int
    authorization: str | None  # Proxy-Authorization, from the proxy URL's user:password
    variable: str  # the environment variable that named it


class BadProxy(ValueError):
    """A proxy setting projector cannot use: the text names the variable and says what to do
    (never its value, which may hold a password)."""


class Endpoint(Record):
    """Where requests go: the provider, or its proxy."""

    scheme: str  # http | https
    host: str
    port: int
    target: str  # what the request line names: path?query, or the absolute URL through a plain-http proxy
    proxy: Proxy | None

    @property
    def tunnel(self) -> bool:
        return self.proxy is not None and self.scheme == "https"


def endpoint(url: str, environ: Mapping[str, str]) -> Endpoint:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url}")
    port = parts.port or (443 if scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    proxy = proxy_for(scheme, parts.hostname, port, environ)
    target = path if proxy is None or scheme == "https" else f"{scheme}://{parts.netloc}{path}"
    return Endpoint(scheme, parts.hostname, port, target, proxy)


def moved(old: Endpoint, location: str, environ: Mapping[str, str]) -> Endpoint | None:
    """Where a redirect points, when it stays on the same origin (the token goes nowhere else)."""
    if location.startswith("/"):
        location = f"{old.scheme}://{_netloc(old.host, old.port)}{location}"
    try:
        new = endpoint(location, environ)
    except ValueError:
        return None
    return new if (new.scheme, new.host, new.port) == (old.scheme, old.host, old.port) else None


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


# --------------------------------------------------------------------------- proxies


def proxy_for(scheme: str, host: str, port: int, environ: Mapping[str, str]) -> Proxy | None:
    """The proxy the environment names for this URL, as curl and httpx read it."""
    if _bypassed(host, port, environ.get("no_proxy", environ.get("NO_PROXY", ""))):
        return None
    names = [f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"]
    if scheme == "http" and "REQUEST_METHOD" in environ:
        names.remove("HTTP_PROXY")  # a CGI request's Proxy: header would land there (httpoxy)
    variable = next((name for name in names if environ.get(name)), None)
    if variable is None:
        return None
    value = environ[variable]
    how = "set it to http://HOST:PORT (which tunnels https with CONNECT), or add the provider's host to NO_PROXY"
    try:
        parts = urlsplit(value if "://" in value else "http://" + value)
        port = parts.port or 80
    except ValueError as error:  # brackets that do not close, a port that is not one (its text names no password)
        raise BadProxy(f"${variable} is not a proxy URL ({error}); {how}") from None
    if parts.scheme.lower() != "http":
        named = parts.scheme.lower()[:20]
        article = "an" if named[:1] in ("a", "e", "i", "o", "u", "h") else "a"
        raise BadProxy(f"${variable} names {article} {named}:// proxy; projector speaks to proxies over plain http only: {how}")
    if not parts.hostname:
        raise BadProxy(f"${variable} names no proxy host; {how}")
    authorization = None
    if parts.username is not None:
        import base64

        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        authorization = "Basic " + base64.b64encode(pair).decode("ascii")
    return Proxy(parts.hostname, port, authorization, variable)


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    host = host.lower().strip("[]")
    for entry in (e.strip().lower() for e in no_proxy.split(",")):
        if not entry:
            continue
        if entry == "*":
            return True
        name, _, entry_port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = (name or entry).strip("[]").lstrip(".")
        if host == name or host.endswith("." + name) or _in_network(host, name):
            return True
    return False


def _in_network(host: str, entry: str) -> bool:
    if "/" not in entry:
        return False
    import ipaddress

    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
    except ValueError:
        return False


# --------------------------------------------------------------------------- connections

_tls: Any = None


def _tls_context() -> Any:
    """The system's trust store (``SSL_CERT_FILE``/``SSL_CERT_DIR`` honoured), made once."""
    global _tls
    if _tls is None:
        import ssl

        _tls = ssl.create_default_context()
        _tls.set_alpn_protocols(["http/1.1"])
    return _tls


_HEADER_LINES: dict[tuple[Any, ...], bytes] = {}  # (name, *values) -> the line http.client made of them
_HEADER_LINES_KEPT = 64
_UNREMEMBERED = ("Content-Length", "Last-Event-ID")  # a new value nearly every time


class Connection(http_client.HTTPConnection):  # type: ignore[misc,name-defined]
    """One keep-alive connection to the endpoint (through its proxy, if any)."""

    def __init__(self, place: Endpoint, timeout: float):
        via = place.proxy
        super().__init__(via.host if via else place.host, via.port if via else place.port, timeout=timeout)
        self.place = place
        self.plain = place.scheme == "http"
        self._limit: float | None = None  # SO_RCVTIMEO and SO_SNDTIMEO in force (plain TCP)
        self._ahead = b""  # the next response's first bytes, when one read brought its whole head
        self._heads: Heads | None = None  # those bytes, when it took more (head_arrived)
        self.heard = False  # the provider sent something since the last response began
        self._create_connection = self._open
        if place.tunnel:
            assert via is not None
            headers = {"Proxy-Authorization": via.authorization} if via.authorization else None
            self.set_tunnel(place.host, place.port, headers=headers)

    @staticmethod
    def _open(address: tuple[str, int], *args: Any) -> socket.socket:
        host, port = address
        # An ASCII host as bytes: a str would make getaddrinfo import the idna codec (~3 ms).
        return socket.create_connection((host.encode("ascii") if host.isascii() else host, port), *args)  # type: ignore[arg-type]

    def putheader(self, header: str, *values: Any) -> None:
        """http.client's, remembered: each distinct line is checked and encoded once. A session
        sends the same seven on every request, and checking them was a fifth of a proxied call."""
        key = (header, *values)
        line = _HEADER_LINES.get(key)
        if line is not None:
            self._buffer.append(line)
            return
        super().putheader(header, *values)
        if header not in _UNREMEMBERED:
            if len(_HEADER_LINES) >= _HEADER_LINES_KEPT:
                _HEADER_LINES.clear()  # a session's lines come back at its next request
            _HEADER_LINES[key] = self._buffer[-1]

    def send(self, data: Any) -> None:
        """http.client's, with one limit for the whole of it on plain TCP: the kernel's limits
        each send() on its own, so a provider reading a large body slowly could stretch it
        without end (CPython's own timeout limits the whole sendall, as TLS keeps it)."""
        if self.sock is None and self.auto_open:
            self.connect()  # (http.client's send opens the connection on first use)
        if self.sock is None or not self.plain or not isinstance(data, bytes):
            return super().send(data)
        sys.audit("http.client.send", self, data)
        view = memoryview(data)
        deadline = time.monotonic() + self.timeout
        sent = self.sock.send(view)  # all of it, nearly always
        if sent == len(view):
            return None
        try:
            while sent < len(view):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError("no answer in time")
                self._set_limit(left)
                sent += self.sock.send(view[sent:])
        finally:
            self._set_limit(self.timeout)
        return None

    def _send_output(self, message_body: Any = None, encode_chunked: bool = False) -> None:
        """A request's headers and its body in one write: http.client sends them apart, two
        segments that wake the server twice."""
        if not isinstance(message_body, bytes) or encode_chunked:
            return super()._send_output(message_body, encode_chunked)  # type: ignore[misc]
        self._buffer.extend((b"", message_body))
        message = b"\r\n".join(self._buffer)
        del self._buffer[:]
        self.send(message)
        return None

    def connect(self) -> None:
        super().connect()  # TCP with TCP_NODELAY (http.client sets it), then a proxy's CONNECT
        if self.place.scheme == "https":
            self.sock = _tls_context().wrap_socket(self.sock, server_hostname=self.place.host)
        else:  # blocking, the kernel limiting each call (see response.Reader)
            self.sock.settimeout(None)
            self._limit = None
            self.wait_at_most(self.timeout)

    def wait_at_most(self, timeout: float) -> None:
        """The longest any one send or receive of the next request may wait."""
        self.timeout = timeout
        if self.sock is None:
            return  # connect() applies it
        if not self.plain:
            self.sock.settimeout(timeout)  # blocking again (with a limit) after a body read without waiting
        elif timeout != self._limit:
            self._set_limit(timeout)

    def _set_limit(self, seconds: float) -> None:
        self._limit = seconds
        whole, micro = divmod(max(1, round(seconds * 1_000_000)), 1_000_000)  # at least 1 µs: zero means no limit
        limit = struct.pack("@ll", whole, micro)  # struct timeval
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, limit)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, limit)

    def whole_call_limits(self) -> None:
        """CPython's own timeout from now on, which limits each whole call even when signals
        interrupt it (the kernel's starts again after each): for the DELETE at the end of a
        session, which runs outside the loop. The connection is closed after it."""
        if self.sock is None:
            self.connect()
        self.sock.settimeout(self.timeout)

    def head_arrived(self) -> bool:
        """Whether the next response's head is all here, after one read of what the socket has,
        without waiting. Readable is not enough: half a head, or a TLS 1.3 server's session
        tickets right after the handshake, and a blocking read would hold every other request
        up. One read a call: the loop calls again while more is there, and sees signals between."""
        sock = self.sock
        if not self.plain:
            sock.settimeout(0.0)
        try:
            data = sock.recv(CHUNK, socket.MSG_DONTWAIT) if self.plain else sock.recv(CHUNK)
        except OSError as error:
            if not nothing_arrived(error):
                raise
            return False
        finally:
            if not self.plain:
                sock.settimeout(self.timeout)
        if not data:
            return True  # closed: getresponse() says how
        self.heard = True
        if self._heads is None:
            if final_head_in(data):  # the usual: the whole head in the first read
                self._ahead = data
                return True
            self._heads = Heads()
        return self._heads.add(data)

    @property
    def response_class(self) -> Any:
        """What http.client calls to make a response (as it would a class): one that starts with
        the bytes read ahead. (A property: a bound method kept on the instance would make every
        connection a reference cycle.)"""
        return self._response

    def _response(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None, url: str | None = None) -> Response:
        ahead, self._ahead, self.heard = self._ahead, b"", False
        if self._heads is not None:
            ahead, self._heads = bytes(self._heads.data), None
        return Response(sock, debuglevel, method, url, ahead=ahead)


class Pool:
    """Idle keep-alive connections to one endpoint."""

    KEEP = 4

    def __init__(self, place: Endpoint):
        self.place = place
        self._idle: list[Connection] = []

    def take(self, timeout: float) -> tuple[Connection, bool]:
        """A connection and whether it was used before (a server may have closed it since: the
        exchange then tries once more on a new one)."""
        while self._idle:
            connection = self._idle.pop()
            if connection.place is self.place and connection.sock is not None:
                connection.wait_at_most(timeout)
                return connection, True
            connection.close()
        return Connection(self.place, timeout), False

    def give(self, connection: Connection) -> None:
        if len(self._idle) < self.KEEP and connection.sock is not None:
            self._idle.append(connection)
        else:
            connection.close()

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()


# --------------------------------------------------------------------------- one exchange


class Sink:
    """What an exchange tells about its reply (upstream's _Reply, _Ack and _Listen are sinks)."""

    def head(self, exchange: Exchange, response: Any) -> None: ...
    def chunk(self, exchange: Exchange, data: bytes) -> None: ...
    def end(self, exchange: Exchange, problem: str | None) -> None: ...


class Exchange:
    """One request on a pooled connection; its reply handed to ``sink`` as it arrives: ``head``
    once, ``chunk`` for each piece of the body, ``end`` once (``problem``: what went wrong).
    ``cancel`` stops it without telling the sink."""

    def __init__(self, loop: Loop, pool: Pool, method: str, body: bytes | None, headers: dict[str, str], sink: Sink,
                 timeout: float = IO_TIMEOUT):
        self.loop, self.pool, self.method, self.body, self.headers, self.sink = loop, pool, method, body, headers, sink
        self.timeout = timeout
        self.response: Any = None
        self.done = False
        self._connection: Connection | None = None
        self._sock: socket.socket | None = None
        self._reused = False
        self._body: Body = Body(None)

    def start(self) -> Exchange:
        self._connection, self._reused = self.pool.take(self.timeout)
        try:
            with self.loop.blocking():
                self._connection.request(self.method, self.pool.place.target, body=self.body, headers=self.headers)
        except Exception as error:  # noqa: BLE001 - every failure ends the exchange with words, not a traceback
            if self._reused and not isinstance(error, (Interrupted, TimeoutError, BlockingIOError)):  # a stale connection, not a slow provider
                return self._again()
            self._fail(error)
            return self
        self._sock = self._connection.sock
        self.loop.watch(self._sock, self._readable)
        return self

    def _again(self) -> Exchange:
        """The server had closed the reused connection: the same request on a new one."""
        assert self._connection is not None
        self._connection.close()
        self.pool = _Fresh(self.pool)
        return self.start()

    def cancel(self) -> None:
        if not self.done:
            self.done = True
            self._release(keep=False)

    @property
    def heard(self) -> bool:
        """Whether the provider sent anything of its reply (else it could not be reached)."""
        return self.response is not None or (self._connection is not None and self._connection.heard)

    def _readable(self) -> None:
        if self.done:
            return  # (a round's timer, after the end)
        try:
            if self.response is None:
                if not self._connection.head_arrived():  # type: ignore[union-attr]
                    return  # the rest of the head comes later: the loop calls again
                with self.loop.blocking():
                    self.response = self._connection.getresponse()  # type: ignore[union-attr]
                self._body = Body(self.response)
                self.response.reader.stream()  # the body is read as it comes: never wait for more here
                self.sink.head(self, self.response)
            reads = 0
            while not self.done:
                if self._body.finished:
                    self.done = True
                    self._release(keep=not self.response.will_close)
                    self.sink.end(self, None)
                    return
                if reads == ROUND:  # a provider that never pauses: the rest in the loop's next round
                    self.loop.later(0, self._readable)
                    return
                reads += 1
                data = self._read()
                if data is None:
                    return  # nothing yet: the loop calls again when the socket is readable
                if not data:
                    if not self._body.until_closed:
                        raise http_client.IncompleteRead(b"")
                    self._body.finished = True
                    continue
                payload = self._body.feed(data)
                if payload:
                    self.sink.chunk(self, payload)
        except Exception as error:  # noqa: BLE001 - see start()
            if self.response is None and self._reused and not isinstance(error, (Interrupted, ProviderFault)):
                self.loop.unwatch(self._sock)
                self._again()
                return
            self._fail(error)

    def _read(self) -> bytes | None:
        """What the socket has: bytes, b"" at its end, None when nothing came yet. (http.client
        decodes chunks only with blocking reads, so the body is read raw, see Body.) A read of
        CHUNK (more than the reader's buffer) always empties its buffer, so waiting for the
        socket to be readable never leaves buffered bytes behind."""
        data = self.response.fp.read1(CHUNK)
        return None if not data and self.response.reader.nothing_yet() else data

    def _fail(self, error: BaseException) -> None:
        if self.done:
            return
        self.done = True
        self._release(keep=False)
        what = describe(error)
        proxy = self.pool.place.proxy
        if proxy is not None and not self.heard:  # the connection is the proxy's: say which, and where it was named
            named = f"the proxy at {_netloc(proxy.host, proxy.port)} (from ${proxy.variable})"
            if isinstance(error, ConnectionRefusedError):
                what = f"{named} refused the connection"
            elif isinstance(error, socket.gaierror):
                what = f"{named}: its host name does not resolve"
            elif what.startswith("the proxy "):
                what = named + what[len("the proxy") :]
        self.sink.end(self, what)

    def _release(self, keep: bool) -> None:
        if self._sock is not None:
            self.loop.unwatch(self._sock)
        if self.response is not None:
            self.response.close()
        if self._connection is not None:
            if keep:
                self.pool.give(self._connection)
            else:
                self._connection.close()


class Body:
    """Where a reply's body ends, and its bytes without the chunked framing: fed raw bytes as
    they arrive, it never waits for more (a chunk size line cut in two is simply kept)."""

    def __init__(self, response: Any):
        self.chunked = bool(response is not None and response.chunked)
        self.left: int | None = None if response is None or self.chunked else response.length  # None: until closed
        self.until_closed = not self.chunked and self.left is None
        self.finished = not self.chunked and self.left == 0
        self._state = "size"  # chunked: size | data | end-of-data | trailer
        self._line = b""
        self._size = 0  # chunked: bytes left in the current chunk

    def feed(self, data: bytes) -> bytes:
        if not self.chunked:
            if self.left is not None:
                data = data[: self.left]
                self.left -= len(data)
                self.finished = self.left == 0
            return data
        out: list[bytes] = []
        at, size = 0, len(data)
        while at < size and not self.finished:
            if self._state == "data":
                take = data[at : at + self._size]
                out.append(take)
                at += len(take)
                self._size -= len(take)
                if not self._size:
                    self._state = "end-of-data"
                continue
            end = data.find(b"\n", at)
            if end < 0:
                self._line += data[at:]
                if len(self._line) > MAX_LINE:
                    raise ProviderFault(f"bad chunked framing (a line of more than {MAX_LINE} bytes between chunks)")
                break
            line, self._line, at = (self._line + data[at:end]).rstrip(b"\r"), b"", end + 1
            if self._state == "size":
                self._size = _chunk_size(line)
                self._state = "data" if self._size else "trailer"
            elif self._state == "end-of-data":
                self._state = "size"
            elif not line:  # the blank line after the last chunk (and any trailers)
                self.finished = True
        return b"".join(out)


_HEX = b"0123456789abcdefABCDEF"


def _chunk_size(line: bytes) -> int:
    """A chunk's size line (hexadecimal digits, then perhaps ``;`` and extensions)."""
    digits = line.split(b";", 1)[0].strip(b" \t")
    if not digits or digits.strip(_HEX):
        raise ProviderFault("bad chunked framing (a chunk size that is not hexadecimal)")
    return int(digits, 16)


class _Fresh:
    """A pool that hands out a new connection once (for a retry after a stale one)."""

    def __init__(self, pool: Pool):
        self._pool = pool
        self.place = pool.place

    def take(self, timeout: float) -> tuple[Connection, bool]:
        return Connection(self.place, timeout), False

    def give(self, connection: Connection) -> None:
        self._pool.give(connection)


INTERRUPTED = "the session ended first"  # a signal cut a blocking step short: the session's end answers the call


def describe(error: BaseException) -> str:
    """What went wrong on the way to the provider, in words. Never an exception's own text where
    it could hold a header (and so the token): http.client quotes a header it refuses."""
    name = type(error).__name__
    if isinstance(error, Interrupted):
        return INTERRUPTED
    if isinstance(error, (TimeoutError, BlockingIOError)):  # BlockingIOError: SO_SNDTIMEO ran out
        return "no answer in time"
    if isinstance(error, ConnectionRefusedError):
        return "connection refused"
    if isinstance(error, socket.gaierror):
        return "its host name does not resolve"
    if name == "SSLCertVerificationError":
        return f"its TLS certificate is not trusted ({getattr(error, 'verify_message', '') or 'verification failed'})"
    if name.startswith("SSL"):
        return f"TLS failed ({getattr(error, 'reason', None) or name})"
    if isinstance(error, ProviderFault):
        return str(error)
    if isinstance(error, http_client.RemoteDisconnected):
        return "it closed the connection without answering"
    if isinstance(error, http_client.IncompleteRead):
        return "the connection closed before the end of its answer"
    if isinstance(error, http_client.HTTPException):
        return f"its answer is not valid HTTP ({name})"
    if isinstance(error, OSError) and str(error).startswith("Tunnel connection failed"):
        return f"the proxy refused the tunnel ({str(error).partition(': ')[2][:80]})"
    if isinstance(error, OSError):
        return error.strerror or name
    return name
