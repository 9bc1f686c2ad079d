"""One client session, from the first line on stdin to the DELETE.

Modes:
- local: the KB set is empty. The whole session is answered here as a server with no tools;
  no socket is ever opened.
- proxy: every message passes through to the provider, from ``initialize`` on.
- roots: the folder is unbound and the client declared ``roots``. ``initialize`` is answered
  here; after ``notifications/initialized`` one ``roots/list`` goes to the client; its requests
  wait in order (``ping`` is answered at once); the roots' bindings decide the set and the tool
  rule (core.scope.over_roots); then the provider's session is opened with the version already
  promised, and the queue replayed.

- signing-in: an OAuth provider with no usable token (bridge.signing). ``initialize`` is answered
  here, with ``tools.listChanged``; the session offers no tools and a tool call gets an error
  that says what to do, while a sign-in runs; once a token is written the provider's session is
  opened with the client's own ``initialize`` (after its roots, when it declared them) and the
  client is told ``notifications/tools/list_changed``.

``server/discover`` (the 2026-07-28 probe) is answered -32601 in every mode, so clients fall back
to ``initialize``. Requests are answered concurrently; the server's own requests get ids of their
own (``u-<n>``) so they never collide with the client's.

Everything happens on one thread (see bridge.loop): stdin is read, requests go up and replies come
back as each file is ready.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable

TYPE_CHECKING = False  # typing is not imported at run time: the bridge starts without it
if TYPE_CHECKING:
    from typing import Any

    from projector.core.scope import Roots
    from projector.core.tools import AnyRule, ToolRule
    from projector.runtime.bridge.signing import SignIn

from projector import __version__
from projector.core.modeltypes import KbSet
from projector.runtime.bridge.loop import Loop
from projector.runtime.bridge.stdio import Line, Reader, Writer, error

SUPPORTED = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
ROOTS_ID = "projector-roots-1"
ROOTS_WAIT = 10.0  # seconds a client gets to answer roots/list
DRAIN = 5.0  # seconds replies in flight may still take after stdin ends (a signal cuts it short)

METHOD_NOT_FOUND, INVALID_PARAMS, PARSE_ERROR, INVALID_REQUEST = -32601, -32602, -32700, -32600


def result(id_: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def negotiated(params: Any) -> str:
    asked = params.get("protocolVersion") if isinstance(params, dict) else None
    return asked if asked in SUPPORTED else SUPPORTED[0]


class Session:
    def __init__(
        self,
        writer: Writer,
        loop: Loop,
        kbs: KbSet,
        upstream_for: Callable[[KbSet, Loop, Callable[[dict[str, Any]], None]], Any] | None,  # -> Upstream
        roots_scope: Callable[[list[str]], Roots] | None,  # root paths -> KB set and tool rule; None: no roots step
        instructions: str,
        log: Callable[[str], None],
        tools: ToolRule | AnyRule | None = None,  # the folder's tool rule (core.tools); None: every tool
        show_hidden: bool = False,  # tools/list keeps the hidden tools, marked (`projector tools --all`)
        sign_in: SignIn | None = None,  # an OAuth provider's (bridge.signing): started when there is no usable token
    ):
        self.writer = writer
        self.loop = loop
        self.kbs = kbs
        self.upstream_for = upstream_for
        self.roots_scope = roots_scope
        self.instructions = instructions
        self.log = log
        # local | proxy | roots-init (initialize answered here, waiting for initialized) |
        # roots-wait (roots/list sent, client requests queued) | opening (the provider's session
        # is being opened after the roots) | failed (it could not be: every request gets an error) |
        # signing-in (no usable token: answered here until a sign-in writes one)
        self.mode = "local" if kbs == () else "proxy"
        self.started = False
        self.upstream: Any = None
        self.promised_version: str | None = None
        self.client_init: dict[str, Any] | None = None
        self.waiting: list[dict[str, Any]] = []  # client messages held while roots are resolved
        self.failure = ""  # why the provider is not available (mode failed)
        self.sign_in = sign_in
        self.initialized = False  # the client sent notifications/initialized (while signing in)
        self.announce = False  # tell the client tools/list_changed once the provider's session is open
        self.roots_known = False  # the client's roots decided the set (a sign-in after it opens the session with it)
        self._roots_timer: Any = None
        self._server_ids = itertools.count(1)
        self._server_requests: dict[str, Any] = {}  # our id for a server request -> its own id
        self.show_hidden = show_hidden
        self._use_rule(tools)

    def _use_rule(self, tools: ToolRule | AnyRule | None) -> None:
        """The session's tool rule, chosen before anything is forwarded (when the session is
        made, or once the roots are known): without one it forwards as if there were no filter."""
        self.tools = tools
        if tools is None:
            self.__dict__.pop("_forward", None)
            return
        from projector.core.tools import judge
        from projector.runtime import toolfilter

        self._offers = judge(tools)
        self._toolfilter = toolfilter
        self._forward = self._forward_filtered  # type: ignore[method-assign]

    @property
    def busy(self) -> bool:
        """Requests (or notifications) still on their way to or from the provider."""
        return self.upstream is not None and self.upstream.busy

    # ------------------------------------------------------------------ dispatch

    def receive(self, line: Line, raw: bytes | None = None) -> None:
        """One line from the client (``raw``: its bytes, when it is one message)."""
        if not self.started and isinstance(line, dict) and line.get("method") == "initialize":
            self.started = True
            self.start(line)
        else:
            self.handle(line, raw)

    def handle(self, line: Line, raw: bytes | None = None) -> None:
        if isinstance(line, Exception):
            self.send(error(None, PARSE_ERROR, f"Parse error: {line}"))
            return
        if isinstance(line, list):  # a 2025-03-26 batch: one by one
            if not line:
                self.send(error(None, INVALID_REQUEST, "Invalid request: an empty batch"))
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
            self._forward(line, raw)
        elif self.mode == "signing-in":
            self._answer_unsigned(line)
        elif self.mode == "failed":
            if has_id:
                self.send(error(line["id"], -32000, f"projector: the provider is not available in this session: {self.failure}"))
        else:
            self._roots_mode(line)

    def send(self, message: dict[str, Any], raw: bytes | None = None) -> None:
        """One message to the client (``raw``: its bytes, already encoded)."""
        self.writer.send(message, raw)

    # ------------------------------------------------------------------ local server

    def _local_initialize(self, message: dict[str, Any], list_changed: bool = False) -> None:
        """``list_changed``: the tools come later (a sign-in), and the client is told when."""
        params = message.get("params") or {}
        self.promised_version = negotiated(params)
        self.send(
            result(
                message["id"],
                {
                    "protocolVersion": self.promised_version,
                    "capabilities": {"tools": {"listChanged": list_changed}},
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
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            self.send(error(id_, INVALID_PARAMS, f"Unknown tool: {name} (no knowledge base is shown in this folder)"))
        else:
            self.send(error(id_, METHOD_NOT_FOUND, f"Method not found: {method}"))

    # ------------------------------------------------------------------ roots

    def wants_roots(self, message: dict[str, Any]) -> bool:
        params = message.get("params")
        capabilities = params.get("capabilities") if isinstance(params, dict) else None
        return self.roots_scope is not None and isinstance(capabilities, dict) and "roots" in capabilities

    def start(self, message: dict[str, Any]) -> None:
        """The first initialize decides between proxying, resolving roots first, and waiting for
        a sign-in."""
        self.client_init = message
        if self.sign_in is not None and self.mode != "local" and (why := self.sign_in.needed()):
            self._await_sign_in(why)
            self._local_initialize(message, list_changed=True)
            return
        if self.wants_roots(message):
            self.mode = "roots-init"
            # an OAuth provider's session may yet need a sign-in (its token refused once opened): tools may change
            self._local_initialize(message, list_changed=self.sign_in is not None)
            return
        if self.sign_in is not None and self.mode == "proxy" and "id" in message:
            self._upstream().request(message, lambda answer, raw: self._initialize_answered(message, answer, raw))
            return
        self.handle(message)

    # ------------------------------------------------------------------ signing in

    def _await_sign_in(self, why: str) -> None:
        """No usable token: answer here, and wait for the sign-in (started unless one runs)."""
        assert self.sign_in is not None
        self.log(why)
        self.mode = "signing-in"
        self.sign_in.wait(self.loop, self._signed_in)
        self.instructions = (f"projector: {why}; {self.sign_in.advice()}. The tools of {self.sign_in.provider} "
                             "appear here once signed in.")

    def _initialize_answered(self, message: dict[str, Any], answer: dict[str, Any], raw: bytes | None) -> None:
        """The provider's answer to the client's initialize; one that failed for want of a sign-in
        (a revoked token the refresh cannot cure) is answered here instead, as at an unsigned start."""
        if self.mode == "signing-in":
            self._local_initialize(message, list_changed=True)
        else:
            self.send(answer, raw)

    def _signed_out(self, why: str) -> None:
        """The provider refused the token and no refresh cures it: a sign-in, as at the start
        (also while its session is being opened after the roots: ``_opened`` then waits)."""
        if self.mode in ("proxy", "opening"):
            self._await_sign_in(why)

    def _answer_unsigned(self, message: dict[str, Any]) -> None:
        assert self.sign_in is not None
        if message.get("method") == "notifications/initialized":
            self.initialized = True
        elif message.get("method") == "tools/call" and "id" in message:
            text = f"projector: {self.sign_in.provider} is not signed in: {self.sign_in.advice()}, then call it again."
            self.send(result(message["id"], {"content": [{"type": "text", "text": text}], "isError": True}))
        else:
            self._answer_locally(message)

    def _signed_in(self, _token: str | None, _problem: str | None) -> None:
        """A sign-in wrote a usable token: the provider's session opens (anew, with the client's
        own initialize), and the client hears that the tools changed once it is open."""
        if self.mode != "signing-in":
            return
        assert self.sign_in is not None and self.client_init is not None
        self.log(f"signed in to {self.sign_in.provider}: opening the provider's session")
        self.announce = True
        if self.upstream is not None:  # the one the refused token had: its session is given up
            upstream, self.upstream = self.upstream, None
            self.promised_version = self.promised_version or upstream.protocol_version  # what the client was told
            upstream.close("the sign-in was renewed; call again")
        if self.wants_roots(self.client_init) and not self.roots_known:
            self.mode = "roots-init"
            if self.initialized:
                self._roots_mode({"jsonrpc": "2.0", "method": "notifications/initialized"})
            return
        self._open()

    def _roots_mode(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "notifications/initialized" and self.mode == "roots-init":
            self.mode = "roots-wait"
            self.send({"jsonrpc": "2.0", "id": ROOTS_ID, "method": "roots/list"})
            self._roots_timer = self.loop.later(ROOTS_WAIT, self.roots_timed_out)
        elif method == "ping" and "id" in message:
            self.send(result(message["id"], {}))
        elif method == "notifications/cancelled":
            params = message.get("params")
            cancelled = params.get("requestId") if isinstance(params, dict) else None
            self.waiting = [m for m in self.waiting if "id" not in m or m.get("id") != cancelled]
        else:
            self.waiting.append(message)

    def roots_timed_out(self) -> None:
        if self.mode == "roots-wait":
            self.log("the client did not answer roots/list in time: using the provider's default set")
            self._roots_resolved([])

    def _roots_resolved(self, paths: list[str]) -> None:
        assert self.roots_scope is not None
        if self._roots_timer is not None:
            self._roots_timer.cancel()
        found = self.roots_scope(paths)
        self.roots_known = True
        kbs = found.kbs
        self._use_rule(found.tools)
        if kbs == ():
            self.mode = "local"
            waiting, self.waiting = self.waiting, []
            for message in waiting:
                self._answer_locally(message)
            return
        self.kbs = kbs
        self._open()

    def _open(self) -> None:
        """The provider's session, opened with the client's initialize and the version promised to it."""
        self.mode = "opening"
        assert self.client_init is not None
        opening = dict(self.client_init, id="projector-init-1")
        if self.promised_version is not None:
            opening["params"] = dict(opening.get("params") or {}, protocolVersion=self.promised_version)
        self._upstream().request(opening, self._opened)

    def _opened(self, answer: dict[str, Any], _raw: bytes | None = None) -> None:
        """The provider's answer to the initialize sent on the client's behalf."""
        waiting, self.waiting = self.waiting, []
        if self.mode == "signing-in":  # refused for want of a sign-in (_signed_out): answered here until one is written
            for message in waiting:
                self.handle(message)
            return
        if "result" not in answer:
            self.failure = (answer.get("error") or {}).get("message", "refused")
            self.log(f"could not open the provider's session: {self.failure}")
            self.mode = "failed"
            for message in waiting:
                self.handle(message)
            return
        self.mode = "proxy"
        self.upstream.notify({"jsonrpc": "2.0", "method": "notifications/initialized"})
        if self.announce:
            self.announce = False
            self.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        for message in waiting:
            self._forward(message)

    # ------------------------------------------------------------------ proxy

    def _upstream(self) -> Any:
        if self.upstream is None:
            assert self.upstream_for is not None
            self.upstream = self.upstream_for(self.kbs, self.loop, self._from_server)
            if self.sign_in is not None:
                self.upstream.signed_out = self._signed_out
        return self.upstream

    def _forward(self, message: dict[str, Any], raw: bytes | None = None) -> None:
        if "id" in message:
            self._upstream().request(message, self.send, raw)
        else:
            self._upstream().notify(message)

    def _forward_filtered(self, message: dict[str, Any], raw: bytes | None = None) -> None:
        """``_forward`` under a tool rule: a hidden tool's call is answered here, a tool list is
        filtered on its way back (runtime.toolfilter). An allowed call goes on re-encoded, exactly as
        judged (a repeated "name" key must not reach a server that reads the first one): about 40k
        instructions a call more than a session without a rule (bench/filter_bench.py)."""
        method = message["method"]
        if method == "tools/call":
            refused = self._toolfilter.refused_call(message, self._offers)
            if refused is not None:
                if refused is not self._toolfilter.DROPPED:
                    self.send(refused)
                return
            raw = None  # re-encoded as judged: the client's bytes may say "name" twice
        elif method == "tools/list" and "id" in message:
            rule, show, toolfilter = self.tools, self.show_hidden, self._toolfilter

            def filtered(answer: dict[str, Any], provider_raw: bytes | None) -> None:
                kept = toolfilter.filtered_list(answer, rule, show)
                self.send(kept, provider_raw if kept is answer else None)

            self._upstream().request(message, filtered, raw)
            return
        Session._forward(self, message, raw)

    def _from_server(self, message: dict[str, Any]) -> None:
        """The server's own request or notification, on to the client."""
        if "id" in message:
            ours = f"u-{next(self._server_ids)}"
            self._server_requests[ours] = message["id"]
            message = dict(message, id=ours)
        self.send(message)

    def _client_response(self, message: dict[str, Any]) -> None:
        if message.get("id") == ROOTS_ID and self.mode == "roots-wait":
            from projector.core.scope import root_path

            found = message.get("result") if "result" in message else None
            roots = found.get("roots") if isinstance(found, dict) else None
            paths = [p for p in (root_path(r.get("uri")) for r in roots or () if isinstance(r, dict)) if p]
            self._roots_resolved(paths)
            return
        original = self._server_requests.pop(message.get("id"), _MISSING)
        if original is _MISSING or self.upstream is None:
            self.log(f"dropped a reply to an unknown request id {message.get('id')!r}")
            return
        self.upstream.notify(dict(message, id=original))

    # ------------------------------------------------------------------ end

    def finish(self, why: str) -> None:
        """Answer what is still waiting with ``why``, then end the provider's session."""
        if self.upstream is not None:
            self.upstream.close(why)


_MISSING = object()


def run(session: Session, reader: Reader, loop: Loop) -> None:
    """Serve the session until stdin ends, a signal arrives or stdout closes; then let replies in
    flight finish (bounded: DRAIN after the end of stdin, none after a signal) and end it."""
    loop.watch(reader.fd, reader.readable)
    while not (reader.ended or loop.signalled or session.writer.broken):
        loop.once()
    loop.unwatch(reader.fd)
    deadline = time.monotonic() + DRAIN
    while session.busy and not (loop.signalled or session.writer.broken) and time.monotonic() < deadline:
        loop.once(deadline - time.monotonic())
    session.finish("the session ended before the provider answered" if not loop.signalled
                   else "the session was stopped (signal) before the provider answered")
