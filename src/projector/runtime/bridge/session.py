"""One client session, from the first line on stdin to the DELETE.

Modes:
- local: the KB set is empty. The whole session is answered here as a server with no tools;
  no socket is ever opened.
- proxy: every message passes through to the provider, from ``initialize`` on.
- roots: the folder is unbound and the client declared ``roots``. ``initialize`` is answered
  here; after ``notifications/initialized`` one ``roots/list`` goes to the client; its requests
  wait in order (``ping`` is answered at once); the roots' bindings decide the set; then the
  provider's session is opened with the version already promised, and the queue replayed.

``server/discover`` (the 2026-07-28 probe) is answered -32601 in every mode, so clients fall back
to ``initialize``. Requests are answered concurrently; the server's requests inside a stream get
ids of their own (``u-<n>``) so they never collide with the client's.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from projector import __version__
from projector.core.model import KbSet
from projector.runtime.bridge.stdio import Line, Writer

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ROOTS_ID = "projector-roots-1"
ROOTS_WAIT = 10.0  # seconds a client gets to answer roots/list
DRAIN = 5.0  # seconds replies in flight may take once the client has gone

METHOD_NOT_FOUND, INVALID_PARAMS, PARSE_ERROR, INVALID_REQUEST = -32601, -32602, -32700, -32600


def error(id_: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def result(id_: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def negotiated(params: Any) -> str:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return asked if asked in SUPPORTED else SUPPORTED[0]


class Session:
    def __init__(
        self,
        writer: Writer,
        kbs: KbSet,
        upstream_for: Callable[[KbSet], Any],  # KB set -> Upstream (opened lazily)
        roots_scope: Callable[[list[str]], KbSet] | None,  # root paths -> KB set; None: no roots step
        instructions: str,
        log: Callable[[str], None],
    ):
        self.writer = writer
        self.kbs = kbs
        self.upstream_for = upstream_for
        self.roots_scope = roots_scope
        self.instructions = instructions
        self.log = log
        # local | proxy | roots-init (initialize answered here, waiting for initialized) |
        # roots-wait (roots/list sent, client requests queued) | failed (the provider could not
        # be opened after roots: every request gets an error)
        self.mode = "local" if kbs == () else "proxy"
        self.upstream: Any = None
        self.promised_version: str | None = None
        self.client_init: dict[str, Any] | None = None
        self.waiting: list[dict[str, Any]] = []  # client messages held while roots are resolved
        self.roots_deadline: float | None = None
        self.pending = 0  # requests being answered
        self._work: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._idle_workers = 0
        self._server_ids = itertools.count(1)
        self._server_requests: dict[str, Any] = {}  # our id for a server request -> its own id
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)

    # ------------------------------------------------------------------ dispatch

    def handle(self, line: Line) -> None:
        if isinstance(line, Exception):
            self.send(error(None, PARSE_ERROR, f"Parse error: {line}"))
            return
        if isinstance(line, list):  # a 2025-03-26 batch: one by one
            for item in line:
                self.handle(item if isinstance(item, dict) else ValueError("not a JSON-RPC message"))
            return
        method, has_id = line.get("method"), "id" in line
        if not isinstance(method, str):
            if has_id and ("result" in line or "error" in line):
                self._client_response(line)
            elif has_id:
                self.send(error(line.get("id"), INVALID_REQUEST, "Invalid request"))
            return
        if method == "server/discover" and has_id:
            self.send(error(line["id"], METHOD_NOT_FOUND, "Method not found: server/discover (use initialize)"))
        elif self.mode == "local":
            self._answer_locally(line)
        elif self.mode == "proxy":
            self._forward(line)
        else:
            self._roots_mode(line)

    def send(self, message: dict[str, Any]) -> None:
        self.writer.send(message)

    # ------------------------------------------------------------------ local server

    def _local_initialize(self, message: dict[str, Any]) -> None:
        params = message.get("params") or {}
        self.promised_version = negotiated(params)
        self.send(
            result(
                message["id"],
                {
                    "protocolVersion": self.promised_version,
                    "capabilities": {"tools": {"listChanged": False}},
                    "serverInfo": {"name": "projector", "version": __version__},
                    "instructions": self.instructions,
                },
            )
        )

    def _answer_locally(self, message: dict[str, Any]) -> None:
        if "id" not in message:
            return  # notifications need no answer
        method, id_ = message["method"], message["id"]
        if method == "initialize":
            self._local_initialize(message)
        elif method == "ping":
            self.send(result(id_, {}))
        elif method == "tools/list":
            self.send(result(id_, {"tools": []}))
        elif method == "tools/call":
            name = (message.get("params") or {}).get("name")
            self.send(error(id_, INVALID_PARAMS, f"Unknown tool: {name} (no knowledge base is shown in this folder)"))
        else:
            self.send(error(id_, METHOD_NOT_FOUND, f"Method not found: {method}"))

    # ------------------------------------------------------------------ roots

    def wants_roots(self, message: dict[str, Any]) -> bool:
        capabilities = (message.get("params") or {}).get("capabilities")
        return self.roots_scope is not None and isinstance(capabilities, dict) and "roots" in capabilities

    def start(self, message: dict[str, Any]) -> None:
        """The first initialize decides between proxying and resolving roots first."""
        if self.mode in ("proxy", "local") and message.get("method") == "initialize" and self.wants_roots(message):
            self.mode = "roots-init"
            self.client_init = message
            self._local_initialize(message)
            return
        self.handle(message)

    def _roots_mode(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "notifications/initialized" and self.mode == "roots-init":
            self.mode = "roots-wait"
            self.send({"jsonrpc": "2.0", "id": ROOTS_ID, "method": "roots/list"})
            self.roots_deadline = time.monotonic() + ROOTS_WAIT
        elif method == "ping" and "id" in message:
            self.send(result(message["id"], {}))
        elif method == "notifications/cancelled":
            cancelled = (message.get("params") or {}).get("requestId")
            self.waiting = [m for m in self.waiting if m.get("id") != cancelled or "id" not in m]
        else:
            self.waiting.append(message)

    def roots_timed_out(self) -> None:
        self.log("the client did not answer roots/list in time: using the provider's default set")
        self._roots_resolved([])

    def _roots_resolved(self, paths: list[str]) -> None:
        assert self.roots_scope is not None
        self.roots_deadline = None
        kbs = self.roots_scope(paths)
        waiting, self.waiting = self.waiting, []
        if kbs == ():
            self.mode = "local"
            for message in waiting:
                self._answer_locally(message)
            return
        self.kbs = kbs
        self.mode = "proxy"
        assert self.client_init is not None
        opening = dict(self.client_init, id="projector-init-1")
        opening["params"] = dict(opening.get("params") or {}, protocolVersion=self.promised_version)
        upstream = self._upstream()
        try:
            answer = upstream.request(opening, self._from_server)
            if "error" in answer:
                raise RuntimeError(answer["error"].get("message", "refused"))
            upstream.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        except Exception as failure:  # noqa: BLE001 - every failure becomes an answer, never a hang
            self.log(f"could not open the provider's session: {failure}")
            self.mode = "failed"
            for message in waiting:
                if "id" in message:
                    self.send(error(message["id"], -32000, f"projector: the provider is not available: {failure}"))
            return
        for message in waiting:
            self._forward(message)

    # ------------------------------------------------------------------ proxy

    def _upstream(self) -> Any:
        if self.upstream is None:
            self.upstream = self.upstream_for(self.kbs)
        return self.upstream

    def _forward(self, message: dict[str, Any]) -> None:
        if self.mode == "failed":
            if "id" in message:
                self.send(error(message["id"], -32000, "projector: the provider is not available in this session"))
            return
        if "id" not in message:
            self._upstream().notify(message)  # in order, before anything read after it
        elif message.get("method") == "initialize":
            self._request(message)  # nothing else may go up before the session exists
        else:
            self._in_thread(lambda: self._request(message))

    def _request(self, message: dict[str, Any]) -> None:
        from projector.runtime.bridge.upstream import UpstreamError, _Answered

        try:
            self.send(self._upstream().request(message, self._from_server))
        except _Answered as answered:
            self.send(answered.response)
        except UpstreamError as failure:
            self.send(error(message["id"], failure.code, f"projector: {failure}"))
        except Exception as failure:  # noqa: BLE001 - never a hang: the client gets an answer
            self.log(f"unexpected failure forwarding {message.get('method')}: {failure!r}")
            self.send(error(message["id"], -32603, f"projector: internal error: {failure}"))

    def _in_thread(self, work: Callable[[], None]) -> None:
        """Run ``work`` on a worker (reused; a new one only when all are busy)."""
        with self._lock:
            self.pending += 1
            if self._idle_workers == 0:
                threading.Thread(target=self._worker, daemon=True).start()
            else:
                self._idle_workers -= 1
        self._work.put(work)

    def _worker(self) -> None:
        while True:
            work = self._work.get()
            try:
                work()
            finally:
                with self._lock:
                    self.pending -= 1
                    self._idle_workers += 1
                    self._settled.notify_all()

    def _from_server(self, message: dict[str, Any]) -> None:
        """The server's own request or notification inside a stream, on to the client."""
        if "id" in message:
            ours = f"u-{next(self._server_ids)}"
            with self._lock:
                self._server_requests[ours] = message["id"]
            message = dict(message, id=ours)
        self.send(message)

    def _client_response(self, message: dict[str, Any]) -> None:
        if message.get("id") == ROOTS_ID and self.mode == "roots-wait":
            from projector.core.scope import root_path

            roots = (message.get("result") or {}).get("roots") if "result" in message else None
            paths = [p for p in (root_path(r.get("uri")) for r in roots or () if isinstance(r, dict)) if p]
            self._roots_resolved(paths)
            return
        with self._lock:
            original = self._server_requests.pop(message.get("id"), _MISSING)
        if original is _MISSING or self.upstream is None:
            self.log(f"dropped a reply to an unknown request id {message.get('id')!r}")
            return
        self.upstream.notify(dict(message, id=original))

    # ------------------------------------------------------------------ end

    def finish(self, drain: float = DRAIN) -> None:
        """Let replies in flight finish (bounded), then end the provider's session."""
        deadline = time.monotonic() + drain
        with self._lock:
            while self.pending and time.monotonic() < deadline:
                self._settled.wait(max(0.0, deadline - time.monotonic()))
        if self.upstream is not None:
            self.upstream.close()


_MISSING = object()


def run(session: Session, lines: queue.Queue[Line | None], stopping: threading.Event) -> None:
    """The main loop: hand each line to the session until stdin ends or a signal arrives."""
    started = False
    while not stopping.is_set() and not session.writer.broken:
        timeout = None
        if session.roots_deadline is not None:
            timeout = max(0.0, session.roots_deadline - time.monotonic())
        try:
            line = lines.get(timeout=timeout if timeout is not None else 0.5)
        except queue.Empty:
            if session.roots_deadline is not None and time.monotonic() >= session.roots_deadline:
                session.roots_timed_out()
            continue
        if line is None:
            break
        if not started and isinstance(line, dict) and line.get("method") == "initialize":
            started = True
            session.start(line)
        else:
            session.handle(line)
