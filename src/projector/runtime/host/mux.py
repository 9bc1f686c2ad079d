"""One server, many sessions: what each JSON-RPC message becomes on the other side (pure).

The host (``daemon``) reads lines and writes lines; this module decides where each message goes
and how it is rewritten, and keeps the tables that make that possible:

- ``initialize``: the first goes to the server and its result is kept; a later session gets the
  kept result at once (with its own id). A newer protocol version than the one agreed is answered
  with the agreed version, as a server that supports only that one would (the client decides);
  an older one cannot be served by this server (``serves``): the host gives that session a
  server of its own, and a mux asked anyway answers with an error. The host sends the server one
  ``notifications/initialized`` of its own; no session's is forwarded.
- Requests get ids of the host's (an integer counter), so ids of different sessions never
  collide at the server; the reply goes back to the session that asked, with its own id.
  ``_meta.progressToken`` is rewritten the same way, so ``notifications/progress`` reaches only
  the session that owns the token. ``notifications/cancelled`` has its ``requestId`` rewritten.
- ``resources/subscribe`` is tracked per session; ``notifications/resources/updated`` reaches
  only the sessions subscribed to that URI; an ``unsubscribe`` reaches the server only when the
  last subscriber leaves. Every other notification (``*/list_changed``, log messages) reaches
  every session that has been initialised.
- The server's own requests: ``ping`` and ``roots/list`` are answered here (the sessions of one
  workspace share its root, so the root is the workspace's; the server is told roots are
  supported, and no session's ``roots/list_changed`` is forwarded). ``sampling/createMessage``
  and ``elicitation/create`` go to the session they are for: the one whose request created the
  task named by ``_meta["io.modelcontextprotocol/related-task"]`` (2025-11-25), else the one
  session with a request in flight, else (none in flight) the session heard from most recently.
  When several sessions have requests in flight and nothing relates the request to one of them
  (over stdio, nothing but a task can), the server gets an error rather than another session's
  answer. A reply's id is mapped back to the server's.
- A session that leaves has its requests cancelled at the server, the server's requests to it
  answered with an error, and its subscriptions dropped.

``Out`` pairs say where each resulting message goes: ``SERVER`` or a session's number.
"""

from __future__ import annotations

import itertools

TYPE_CHECKING = False  # the host imports as little as it can: every module is resident memory
if TYPE_CHECKING:
    from typing import Any

    Out = tuple[int, dict[str, Any]]

SERVER = 0  # the destination of messages for the server; sessions are numbered from 1

METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32601, -32602, -32603
SERVER_GONE = -32000  # the server exited: the session is being closed
RELATED_TASK = "io.modelcontextprotocol/related-task"  # _meta key: the task a message belongs to (2025-11-25)
URI_SAFE = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/")


def error(id_: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": id_, "error": body}


def result(id_: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": value}


def satisfies(asked: Any, agreed: Any) -> bool:
    """Whether a session asking for protocol version ``asked`` can be given ``agreed``: the same,
    or an older one than it asked for (versions are dates; a client supports the older ones)."""
    return asked == agreed or (_is_date(asked) and _is_date(agreed) and asked > agreed)


def file_uri(path: str) -> str:
    """``file://`` and the absolute ``path``, percent-encoded."""
    return "file://" + "".join(chr(b) if b in URI_SAFE else f"%{b:02X}" for b in path.encode("utf-8", "surrogateescape"))


def _is_date(text: Any) -> bool:
    """``YYYY-MM-DD``, the shape of every protocol version."""
    return isinstance(text, str) and len(text) == 10 and text[4] == text[7] == "-" and text.replace("-", "").isdigit()


class _Request:
    """A session's request at the server."""

    __slots__ = ("session", "id", "method", "token", "uri", "task")

    def __init__(self, session: int, id_: Any, method: str, uri: Any = None):
        self.session = session  # 0: the host's own (its reply is dropped)
        self.id = id_  # the session's own id
        self.method = method
        self.token: Any = None  # the host's progress token standing for the session's, if any
        self.uri = uri  # resources/subscribe: the URI
        self.task = False  # task-augmented (params.task): its answer names the task it made


class _Session:
    __slots__ = ("ready", "heard", "asking", "tools")

    def __init__(self, tools: Any = None) -> None:
        self.ready = False  # initialize answered: it receives notifications
        self.heard = 0  # when it last sent something (a counter, not a clock)
        self.asking: set[int] = set()  # server ids of its requests in flight
        self.tools = tools  # its folder's tool rule (core.tools); None: every tool


class Mux:
    def __init__(self, workspace: str = "/") -> None:
        self._roots = [{"uri": file_uri(workspace), "name": workspace.rstrip("/").rsplit("/", 1)[-1] or workspace}]
        self._task_owners: dict[str, int] = {}  # taskId -> the session whose request created the task
        self._ids = itertools.count(1)
        self._heard = itertools.count(1)
        self.sessions: dict[int, _Session] = {}
        self._requests: dict[int, _Request] = {}  # server id -> request
        self._tokens: dict[int, tuple[int, Any]] = {}  # host progress token -> (session, its token)
        self._asks: dict[str, tuple[int, Any]] = {}  # host id of a server request -> (session, server's id)
        self._subscribers: dict[str, set[int]] = {}  # URI -> sessions subscribed
        self.agreed: dict[str, Any] | None = None  # the server's initialize result
        self._initializing: int | None = None  # server id of the first initialize, while in flight
        self._waiting: list[tuple[int, Any, Any]] = []  # (session, id, version asked) for that result
        self._asked_first: Any = None  # the version the first initialize asked for, while in flight

    # ------------------------------------------------------------------ sessions

    def attach(self, session: int, tools: Any = None) -> None:
        """A new session; ``tools``: its folder's tool rule (core.tools.ToolRule), applied to
        it alone (runtime.toolfilter)."""
        self.sessions[session] = _Session(tools)

    def serves(self, asked: Any) -> bool:
        """Whether a session asking for protocol version ``asked`` can join: the server agreed
        that version or an older one, or its first initialize (in flight) asked for the same or
        an older one, or no session has asked anything yet."""
        if self.agreed is not None:
            return satisfies(asked, self.agreed.get("protocolVersion"))
        return self._initializing is None or satisfies(asked, self._asked_first)

    def version(self) -> Any:
        """The protocol version agreed with the server (None before its first initialize)."""
        return self.agreed.get("protocolVersion") if self.agreed is not None else None

    def in_flight(self, session: int) -> int:
        state = self.sessions.get(session)
        return len(state.asking) if state else 0

    def detach(self, session: int) -> list[Out]:
        """``session`` has gone: cancel its requests at the server, answer the server's requests
        to it, drop its subscriptions."""
        state = self.sessions.pop(session, None)
        if state is None:
            return []
        out: list[Out] = []
        self._waiting = [w for w in self._waiting if w[0] != session]
        self._task_owners = {task: owner for task, owner in self._task_owners.items() if owner != session}
        for server_id in sorted(state.asking):
            request = self._requests.pop(server_id)
            self._tokens.pop(request.token, None)
            if request.method == "initialize":  # never cancelled: its result serves the others
                self._requests[server_id] = _Request(0, None, "initialize")
                continue
            cancel = {"requestId": server_id, "reason": "the session that sent it has ended"}
            out.append((SERVER, {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}))
        for host_id, (asked, server_id) in list(self._asks.items()):
            if asked == session:
                del self._asks[host_id]
                out.append((SERVER, error(server_id, INTERNAL_ERROR, "the session this request went to has ended")))
        for uri, subscribed in list(self._subscribers.items()):
            if session in subscribed:
                subscribed.discard(session)
                if not subscribed:
                    del self._subscribers[uri]
                    out.append((SERVER, self._own_request("resources/unsubscribe", {"uri": uri})))
        return out

    def server_gone(self, why: str) -> list[Out]:
        """The server exited: an error for every request in flight and every initialize waiting."""
        out: list[Out] = []
        for request in self._requests.values():
            if request.session in self.sessions and request.method != "initialize":
                out.append((request.session, error(request.id, SERVER_GONE, why)))
        out += [(session, error(id_, SERVER_GONE, why)) for session, id_, _ in self._waiting]
        for state in self.sessions.values():
            state.asking.clear()
        self._requests.clear()
        self._waiting = []
        return out

    # ------------------------------------------------------------------ from a session

    def from_session(self, session: int, message: Any) -> list[Out]:
        state = self.sessions.get(session)
        if state is None:
            return []
        state.heard = next(self._heard)
        if isinstance(message, list):  # a 2025-03-26 batch: one by one
            return [out for item in message for out in self.from_session(session, item)]
        if not isinstance(message, dict):
            return [(session, error(None, -32600, "Invalid request: not a JSON-RPC message"))]
        method = message.get("method")
        if not isinstance(method, str):
            return self._session_reply(session, message) if "id" in message else []
        if "id" not in message:
            return self._session_notification(session, message)
        return self._session_request(session, state, message)

    def _session_request(self, session: int, state: _Session, message: dict[str, Any]) -> list[Out]:
        method, id_ = message["method"], message["id"]
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "server/discover":  # the 2026-07-28 probe: sessions share an initialize-era server
            return [(session, error(id_, METHOD_NOT_FOUND, "Method not found: server/discover (use initialize)"))]
        if method == "initialize":
            return self._initialize(session, state, id_, params.get("protocolVersion"), message)
        if state.tools is not None:
            from projector.runtime.toolfilter import hidden_call

            refusal = hidden_call(message, state.tools)
            if refusal is not None:
                return [(session, refusal)]
        if method == "resources/unsubscribe":
            uri = params.get("uri")
            subscribed = self._subscribers.get(uri, set())
            subscribed.discard(session)
            if subscribed:  # another session still wants it: the server keeps sending
                return [(session, result(id_, {}))]
            self._subscribers.pop(uri, None)
        request = _Request(session, id_, method, uri=params.get("uri") if method == "resources/subscribe" else None)
        request.task = "task" in params
        server_id = next(self._ids)
        forwarded = dict(message, id=server_id)
        meta = params.get("_meta")
        if isinstance(meta, dict) and "progressToken" in meta:
            request.token = next(self._ids)
            self._tokens[request.token] = (session, meta["progressToken"])
            forwarded["params"] = dict(params, _meta=dict(meta, progressToken=request.token))
        self._requests[server_id] = request
        state.asking.add(server_id)
        return [(SERVER, forwarded)]

    def _initialize(self, session: int, state: _Session, id_: Any, asked: Any, message: dict[str, Any]) -> list[Out]:
        if self.agreed is not None:
            return [(session, self._agreed_answer(session, id_, asked))]
        self._waiting.append((session, id_, asked))
        if self._initializing is not None:
            return []  # the first one is at the server: this one waits for its result
        self._initializing = next(self._ids)
        self._asked_first = asked
        self._requests[self._initializing] = _Request(session, id_, "initialize")
        state.asking.add(self._initializing)
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        capabilities = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
        roots = dict(params, capabilities=dict(capabilities, roots={}))  # answered here, never changed
        return [(SERVER, dict(message, id=self._initializing, params=roots))]

    def _agreed_answer(self, session: int, id_: Any, asked: Any) -> dict[str, Any]:
        assert self.agreed is not None
        version = self.agreed.get("protocolVersion")
        if not satisfies(asked, version):
            return error(
                id_,
                INVALID_PARAMS,
                f"Unsupported protocol version {asked!r}: this workspace's shared server speaks {version} (agreed with "
                "the first session that started it). End the workspace's other sessions (`projector stop`) or give the "
                "provider `shared: false`",
                {"supported": [version], "requested": asked},
            )
        self.sessions[session].ready = True
        return result(id_, self.agreed)

    def _session_notification(self, session: int, message: dict[str, Any]) -> list[Out]:
        method = message["method"]
        tools = self.sessions[session].tools
        if method == "tools/call" and tools is not None:
            from projector.runtime.toolfilter import hidden_call

            if hidden_call(message, tools) is not None:  # DROPPED: a hidden call sent as a notification
                return []
        if method in ("notifications/initialized", "notifications/roots/list_changed"):
            return []  # the host sent the server its own; the roots are the workspace's
        if method == "notifications/cancelled":
            params = message.get("params") if isinstance(message.get("params"), dict) else {}
            state = self.sessions[session]
            server_id = next((s for s in state.asking if self._requests[s].id == params.get("requestId")), None)
            if server_id is None or self._requests[server_id].method == "initialize":
                return []  # already answered (or never cancellable)
            return [(SERVER, dict(message, params=dict(params, requestId=server_id)))]
        return [(SERVER, message)]

    def _session_reply(self, session: int, message: dict[str, Any]) -> list[Out]:
        asked = self._asks.get(message["id"]) if isinstance(message["id"], str) else None
        if asked is None or asked[0] != session:
            return []  # not a request of the server's to this session
        del self._asks[message["id"]]
        return [(SERVER, dict(message, id=asked[1]))]

    # ------------------------------------------------------------------ from the server

    def from_server(self, message: Any) -> list[Out]:
        if isinstance(message, list):
            return [out for item in message for out in self.from_server(item)]
        if not isinstance(message, dict):
            return []
        method = message.get("method")
        if not isinstance(method, str):
            return self._server_reply(message) if "id" in message else []
        if "id" in message:
            return self._server_request(message)
        return self._server_notification(method, message)

    def _server_reply(self, message: dict[str, Any]) -> list[Out]:
        request = self._requests.pop(message["id"], None) if isinstance(message["id"], int) else None
        if request is None:
            return []
        self._tokens.pop(request.token, None)
        if request.session in self.sessions:
            self.sessions[request.session].asking.discard(message["id"])
        if request.method == "initialize":
            return self._initialized(request.session, message)
        if request.method == "resources/subscribe" and "result" in message and request.session in self.sessions:
            self._subscribers.setdefault(request.uri, set()).add(request.session)
        state = self.sessions.get(request.session)
        if state is None:
            return []
        if request.task:
            self._note_task(request.session, message.get("result"))
        if request.method == "tools/list" and state.tools is not None:
            from projector.runtime.toolfilter import filtered_list

            message = filtered_list(message, state.tools)
        return [(request.session, dict(message, id=request.id))]

    def _note_task(self, session: int, answer: Any) -> None:
        """A task-augmented request's answer (CreateTaskResult): its task is ``session``'s."""
        task = answer.get("task") if isinstance(answer, dict) else None
        if isinstance(task, dict) and isinstance(task.get("taskId"), str):
            self._task_owners[task["taskId"]] = session

    def _initialized(self, first: int, message: dict[str, Any]) -> list[Out]:
        """The server's answer to the first initialize: as it is to the session that sent it (its
        client decides about the version), the kept result to the sessions waiting behind it."""
        self._initializing = None
        waiting, self._waiting = self._waiting, []
        if not isinstance(message.get("result"), dict):  # refused: each waiting session hears why; the next one retries
            return [(session, dict(message, id=id_)) for session, id_, _ in waiting]
        self.agreed = message["result"]
        out: list[Out] = [(SERVER, {"jsonrpc": "2.0", "method": "notifications/initialized"})]
        for session, id_, asked in waiting:
            if session == first:
                self.sessions[session].ready = True
                out.append((session, dict(message, id=id_)))
            else:
                out.append((session, self._agreed_answer(session, id_, asked)))
        return out

    def _server_request(self, message: dict[str, Any]) -> list[Out]:
        if message["method"] == "ping":  # the host is the server's peer
            return [(SERVER, result(message["id"], {}))]
        if message["method"] == "roots/list":
            return [(SERVER, result(message["id"], {"roots": self._roots}))]
        session, why = self._choose(message)
        if session is None:
            return [(SERVER, error(message["id"], INTERNAL_ERROR, why))]
        host_id = f"projector-{next(self._ids)}"
        self._asks[host_id] = (session, message["id"])
        return [(session, dict(message, id=host_id))]

    def _choose(self, message: dict[str, Any]) -> tuple[int | None, str]:
        """The session a request of the server's is for (see the module's notes), or None and why."""
        ready = {n: s for n, s in self.sessions.items() if s.ready}
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
        related = meta.get(RELATED_TASK)
        if isinstance(related, dict) and "taskId" in related:
            owner = self._task_owners.get(related["taskId"])
            if owner in ready:
                return owner, ""
            return None, f"the session that created task {related['taskId']!r} is not attached to this shared server"
        busy = [n for n, s in ready.items() if s.asking]
        if len(busy) == 1:
            return busy[0], ""
        if busy:
            return None, (f"projector: {len(busy)} sessions of this shared server have requests in flight and this "
                          f"{message['method']} request does not say which it is for (only a task's "
                          f"_meta {RELATED_TASK!r} can): it was not sent to a session that may not be its own; give the "
                          "provider `shared: false` for sampling or elicitation during concurrent calls")
        if not ready:
            return None, "no session is attached to answer this request"
        return max(ready, key=lambda n: ready[n].heard), ""

    def _server_notification(self, method: str, message: dict[str, Any]) -> list[Out]:
        params = message.get("params") if isinstance(message.get("params"), dict) else {}
        if method == "notifications/progress":
            owner = self._tokens.get(params.get("progressToken"))
            if owner is None or owner[0] not in self.sessions:
                return []
            return [(owner[0], dict(message, params=dict(params, progressToken=owner[1])))]
        if method == "notifications/resources/updated":
            return [(s, message) for s in sorted(self._subscribers.get(params.get("uri"), ()))]
        if method == "notifications/cancelled":  # the server withdraws a request it sent a session
            host_id = next((h for h, (_, server_id) in self._asks.items() if server_id == params.get("requestId")), None)
            if host_id is None:
                return []
            session, _ = self._asks.pop(host_id)
            return [(session, dict(message, params=dict(params, requestId=host_id)))]
        return [(n, message) for n, s in self.sessions.items() if s.ready]

    def _own_request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """A request the host itself sends the server (its reply is dropped)."""
        server_id = next(self._ids)
        self._requests[server_id] = _Request(0, None, method)
        return {"jsonrpc": "2.0", "id": server_id, "method": method, "params": params}
